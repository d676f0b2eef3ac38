"""How an index and an embedder are bound together: which options an index records, the
model-mismatch refusal, and what ``embed`` writes to the index settings once it knows the model.

Defined once here and used by ``embed`` (``ragsift.ingest``) and by ``query``/``explain``/
``tune`` (``ragsift.retrieval.search``): an index's vectors and new vectors must come from the
same model and the same vector-changing options.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from ragsift.embedders.options import EmbedderOptions
from ragsift.errors import Action, RagsiftError, Words

# keys of the ``embedder_options`` index setting: the options that change how texts are
# embedded, recorded by ``embed`` and re-applied to queries (defined once: the fields of ``EmbedderOptions``)
EMBEDDER_OPTIONS = tuple(f.name for f in fields(EmbedderOptions))


def clean_embedder_options(options: dict | None) -> dict:
    """The explicitly chosen ``load_embedder`` options: known keys, ``None`` values dropped."""
    return {
        k: options[k]
        for k in EMBEDDER_OPTIONS
        if isinstance(options, dict) and options.get(k) is not None
    }


def embedder_option_words(options: dict | None) -> Words | None:
    """The parameters that reproduce ``options`` (for messages; None: none given), each
    front end wording them: the CLI as ``embed`` flags (``--pooling cls --no-normalize``),
    the API as arguments (``pooling=cls normalize=False``). A value is shell-quoted."""
    import shlex

    named, values = [], {}
    for key, value in clean_embedder_options(options).items():
        if key == "normalize" and value:
            continue  # normalizing is the default: nothing to name
        values[key] = False if key == "normalize" else shlex.quote(str(value))
        named.append("{" + key + "=_" + key + "}")
    values = {"_" + k: v for k, v in values.items()}
    return Words(" ".join(named), values) if named else None


def load_options(options: dict | None, batch_size: int | None) -> dict:
    """``load_embedder`` keywords: the embedder options (``options``, as the index records
    them) as one ``EmbedderOptions``, and the batch size when given."""
    out: dict[str, Any] = {"options": EmbedderOptions.of(clean_embedder_options(options))}
    if batch_size is not None:
        out["batch_size"] = batch_size
    return out


def check_model(
    settings: dict,
    fingerprint: str,
    name: str = "",
    *,
    subject: str = "the index",
    detail: str = "",
    advice: str = "Pass {model} with the folder of the index's model, or rebuild the index",
) -> None:
    """The model-mismatch refusal, defined once (``embed`` and ``query``/``explain``/``tune``
    use it): an index's vectors and new vectors must come from the same model and options.
    ``advice``: the way out, a template naming parameters (``{model}``, ``{rebuild}``) that
    each front end words (``RagsiftError.worded``)."""
    want = settings.get("model_fingerprint")
    if want and fingerprint != want:
        raise RagsiftError(
            "{subject} was built with model {built} ({want}); this run uses {uses} "
            "({fingerprint}){detail}. " + advice,
            param="model",
            values={
                "subject": subject,
                "built": settings.get("model") or want,
                "want": want,
                "uses": name or fingerprint,
                "fingerprint": fingerprint,
                "detail": detail,
            },
        )


def check_evidence(settings: dict, subject: str = "the index") -> None:
    """Refuse an index whose vectors were made under another evidence layout: before unit
    evidence (ragsift < 0.3: one vector per chunk, no units), or with units but chunk vectors
    their unweighted mean (``units-1``, ragsift 0.3-0.5): one clear line and the way out,
    never a silent mix of the two."""
    from ragsift.embedders.evidence import EVIDENCE_KIND

    found = settings.get("evidence")
    if settings.get("model_fingerprint") and found != EVIDENCE_KIND:
        if found == "units-1":
            why = (
                "an older ragsift (chunk vectors the plain mean of their units); ragsift "
                f"{_version()} weighs each unit by its length"
            )
        elif found:
            why = (
                f"another ragsift (evidence layout {found!r}; ragsift {_version()} reads "
                f"{EVIDENCE_KIND!r})"
            )
        else:
            why = (
                f"an older ragsift (one vector per chunk, no unit evidence); ragsift "
                f"{_version()} ranks chunks by their units"
            )
        rebuild = Action("build", "PATH...", index="INDEX", rebuild=True)
        raise RagsiftError(
            "{subject} was built by {why}: re-embed it with `{rebuild}`",
            values={"subject": subject, "why": why, "rebuild": rebuild},
        )


def _version() -> str:
    from ragsift.version import __version__

    return __version__


def embedder_for(settings: dict, model_dir: str | None = None) -> Any:
    """Load the embedder an index was built with, refusing a different model.

    The embedder options the index recorded (``embedder_options``) are applied, so queries get
    the same pooling and their own prefix without any flag. With no ``model_dir``, an index
    built with ``--model multilingual`` or an endpoint URL (its ``model_source``) gets that
    model (another URL for a moved server: ``model_dir``; the fingerprint leaves out the host).
    """
    from ragsift.embedders import MULTILINGUAL, is_endpoint, load_embedder

    check_evidence(settings)
    given = model_dir is not None
    source = settings.get("model_source")
    if model_dir is None and (source == MULTILINGUAL or is_endpoint(source)):
        model_dir = source
    recorded = clean_embedder_options(settings.get("embedder_options"))
    embedder = load_embedder(model_dir, EmbedderOptions.of(recorded))
    if given and settings.get("model_source") in ("default", MULTILINGUAL):  # it names its own
        check_model(
            settings,
            embedder.fingerprint,
            getattr(embedder, "name", ""),
            advice="Leave out {model} (the index's own model is used), or rebuild the index",
        )
    check_model(settings, embedder.fingerprint, getattr(embedder, "name", ""))
    return embedder


def bind(
    settings: dict, embedder: Any, model_source: str, options: dict | None, subject: str
) -> dict | None:
    """``embed``'s side: refuse ``embedder`` when the index at ``subject`` holds another
    model's vectors (or vectors of other vector-changing options), else return the settings
    to store (None: nothing changed). ``options``: the run's explicit options (None: unknown,
    not recorded)."""
    from ragsift.embedders.evidence import EVIDENCE_KIND

    check_evidence(settings, subject)
    stored = settings.get("model_fingerprint")
    if stored and stored != embedder.fingerprint:
        was = embedder_option_words(settings.get("embedder_options"))
        now = embedder_option_words(options)
        detail: Words | str = ""
        if was or now:
            none = "no embedder options"
            detail = Words(
                " (index built with {was}; this run: {now})",
                {"was": was or none, "now": now or none},
            )
        check_model(
            settings,
            embedder.fingerprint,
            embedder.name,
            subject=subject,
            detail=detail,
            advice="Vectors of different models or embedder options cannot be mixed: "
            "pass {rebuild} to re-embed everything, or use the index's model and "
            "options",
        )
    if (
        stored
        and settings.get("model_source") == model_source
        and not options_changed(settings, options)
    ):
        return None
    values = {
        "model": embedder.name,
        "model_fingerprint": embedder.fingerprint,
        "dimensions": int(embedder.dimensions),
        "model_source": model_source,
        "evidence": EVIDENCE_KIND,
    }
    if options is not None:
        values["embedder_options"] = options
    return values


def options_changed(settings: dict, options: dict | None) -> bool:
    """Whether the run's explicit ``options`` differ from those the index recorded."""
    if options is None:
        return False
    return clean_embedder_options(settings.get("embedder_options")) != options
