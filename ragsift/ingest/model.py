"""The model's side of ``embed``: loading it (ahead, on a thread, when the run will certainly
embed), binding it to the index (``embedders.binding``: the mismatch refusal and the settings
to record), and handing the chunker's token ids to the embedder."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragsift.embedders.binding import bind, load_options, options_changed

if TYPE_CHECKING:
    from ragsift.ingest.request import BuildRequest


class ModelLoad:
    """``load_embedder`` on a daemon thread, for a run that will embed: the session is built
    (native code, the GIL released) while this thread opens the index and the producer
    chunks the first files, instead of after them. ``result()`` waits and returns it, or
    raises what the load raised."""

    def __init__(self, model_dir: str | None, options: dict) -> None:
        import threading

        # numpy's first import is not safe from two threads at once (one may get it half
        # initialised: "cannot import name ... from partially initialized module"), and the
        # caller's thread needs it too (index, Lance): imported here, before the thread
        import numpy  # noqa: F401

        self._embedder = None
        self._error: BaseException | None = None

        def load() -> None:
            try:
                from ragsift.embedders import load_embedder

                self._embedder = load_embedder(model_dir, **options)
            except BaseException as exc:
                self._error = exc

        self._thread = threading.Thread(target=load, name="ragsift-model", daemon=True)
        self._thread.start()

    def result(self):
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._embedder

    def loading(self) -> bool:
        return self._thread.is_alive()

    def wait(self) -> None:
        """Let an unused load finish: no thread outlives the run inside native code."""
        self._thread.join()


class KeptModels:
    """Embedders kept for the runs of one process (``watch``: a run per burst of changes).
    The first run that needs a model loads it; later runs with the same model and options
    take it (their summary's ``model_loaded`` is then false)."""

    def __init__(self) -> None:
        self._kept: dict[str, Any] = {}

    @staticmethod
    def key(model_dir: str | None, options: dict) -> str:
        import json

        from ragsift.embedders import model_source

        return json.dumps([model_source(model_dir), options], sort_keys=True, default=str)

    def get(self, key: str) -> Any:
        return self._kept.get(key)

    def keep(self, key: str, embedder: Any) -> None:
        self._kept[key] = embedder


class ModelSlot:
    """The embedder of one ``embed`` run, loaded on first need (or taken from a ``ModelLoad``
    started ahead), bound to the index before its first vector is written.

    ``store``: the open ``IndexWriter`` (its settings are read and the model's recorded);
    ``request``: the run's ``BuildRequest`` (its ready ``embedder``, e.g. a caching wrapper,
    or None; its batch size; its embedder options, None with a ready embedder and none given:
    unknown, not recorded); ``model_dir``: the model the run uses (``request.index_model``)."""

    def __init__(
        self,
        store: Any,
        request: BuildRequest,
        model_dir: str | None,
        early: ModelLoad | None = None,
        kept: KeptModels | None = None,
    ) -> None:
        self.store = store
        self.kept = kept
        self._embedder = request.embedder
        self.model_dir = model_dir
        self.batch_size = request.batch_size
        given = request.embedder_options.as_dict()
        self.options = given if given or request.embedder is None else None
        self.early = early
        self.loaded = False  # this run loaded a model (the summary's ``model_loaded``)
        self.settings = store.settings()
        self._token_counter = None  # the chunker's counter keeping token ids

    @property
    def model_source(self) -> str:
        from ragsift.embedders import model_source

        return model_source(self.model_dir)

    @property
    def ready(self) -> Any:
        """The embedder if it is already there (no load), else None."""
        return self._embedder

    def loading(self) -> bool:
        """The model is still loading ahead (nothing can be embedded yet)."""
        return self.early is not None and self.early.loading()

    def check_early(self) -> None:
        """Refuse a different model before any work, loading it only when it must be."""
        stored = self.settings.get("model_fingerprint")
        if not stored:
            if self._embedder is None and self.options:
                self.embedder()  # new index: bad options (e.g. --max-length) fail before work
            return
        if (
            self._embedder is None
            and self.settings.get("model_source") == self.model_source
            and not options_changed(self.settings, self.options)
        ):
            return  # same model as last time: verified lazily if something needs embedding
        self.embedder()

    def use(self, embedder: Any) -> Any:
        """Bind an embedder this run obtained elsewhere (the Ray stage's model, seen through
        the vectors it returned) exactly as a loaded one; returns it."""
        self._embedder = embedder
        self.loaded = True
        return self.embedder()

    def embedder(self) -> Any:
        """The bound embedder (loaded now if needed); raises ``RagsiftError`` when the index
        holds another model's vectors."""
        if self._embedder is None:
            key = KeptModels.key(self.model_dir, load_options(self.options, self.batch_size))
            self._embedder = self.kept.get(key) if self.kept is not None else None
            if self._embedder is None:
                if self.early is not None:
                    self._embedder, self.early = self.early.result(), None
                else:
                    from ragsift.embedders import load_embedder

                    self._embedder = load_embedder(
                        self.model_dir, **load_options(self.options, self.batch_size)
                    )
                self.loaded = True
                if self.kept is not None:
                    self.kept.keep(key, self._embedder)
        emb = self._embedder
        if self._token_counter is not None:
            _link_token_ids(emb, self._token_counter)
        values = bind(
            self.settings, emb, self.model_source, self.options, subject=f"index {self.store.path}"
        )
        if values is not None:
            self.store.set_settings(**values)
            self.settings = self.store.settings()
        return emb

    def share_token_ids(self, chunker: Any) -> None:
        """While the chunker sizes chunks in the model's own tokens (``ModelTokenCounter``, on
        the embedder's tokenizer), it keeps the ids of each chunk it counts and the embedder
        takes them instead of encoding the same text again (``TokenMemo``: keyed by the exact
        text, so the ids and vectors are those of a fresh encode). ``None``: stop."""
        counter = getattr(chunker, "counter", None)
        if self._token_counter is not None:
            self._token_counter.keep_token_ids(False)
            self._token_counter = None
            if self._embedder is not None:
                _link_token_ids(self._embedder, None)
        if counter is not None and hasattr(counter, "keep_token_ids"):
            counter.keep_token_ids(True)
            self._token_counter = counter
            if self._embedder is not None:
                _link_token_ids(self._embedder, counter)

    def wait(self) -> None:
        if self.early is not None:
            self.early.wait()


def _link_token_ids(emb: Any, counter: Any) -> None:
    take = getattr(emb, "take_token_ids_from", None)
    if take is not None:
        take(counter)
