"""`ragsift mcp`: the real server started as a subprocess over stdio, driven by the MCP SDK's
own client, on a real index (real model). Its records must be the CLI's records."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys

import pytest

from ragsift.mcp_server.service import MAX_K
from ragsift.retrieval.relevance import DEFAULT_THRESHOLDS
from tests.conftest import REPO, run_cli
from tests.test_query_cli import fixture_index

FLOOR = DEFAULT_THRESHOLDS["hybrid"]  # the measured default: the server's floor here

pytest.importorskip("mcp", reason="the mcp extra is part of [test]")

BEES = "when do honey bees swarm"
NONSENSE = "kubernetes ingress controller"
SCORE_TOLERANCE = 1e-6 + 5e-7  # 1e-6 (the records' rounding) plus float slack


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> str:
    return fixture_index(tmp_path_factory)


def with_server(index: str, body, *extra: str):
    """Start `python -m ragsift mcp --index INDEX EXTRA...` and run ``await body(client)``."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async def main():
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "ragsift", "mcp", "--index", index, *extra],
            cwd=str(REPO),
        )
        async with Client(params) as client:
            return await body(client)

    return asyncio.run(main())


def cli_json_lines(*args: str) -> list[dict]:
    proc = run_cli(*args)
    assert proc.returncode in (0, 1), proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def approx_equal(a, b, tol: float = SCORE_TOLERANCE) -> bool:
    """Records equal, numbers within ``tol``: scores are rounded to 6 decimals in each
    process, so two runs whose scores differ in the 7th decimal may print values 1e-6
    apart (0.50864 vs 0.508639); 1e-6 plus float slack is the stated tolerance."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(approx_equal(a[k], b[k], tol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(approx_equal(x, y, tol) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) <= tol
    return a == b


def mcp_only(record: dict) -> dict:
    """A record without the fields only the server adds (its floor)."""
    return {k: v for k, v in record.items() if k not in ("floor", "floor_origin")}


def test_tools_are_listed_with_schemas_and_descriptions_that_say_what_the_threshold_means(index):
    async def body(client):
        return (await client.list_tools()).tools

    tools = {t.name: t for t in with_server(index, body)}
    assert set(tools) == {"search", "explain", "list_documents", "read"}
    for name in ("search", "explain"):
        text = tools[name].description
        assert "threshold" in text and "empty result is a real answer" in text
        assert set(tools[name].input_schema["properties"]) == {"query", "k", "threshold", "path"}
        assert tools[name].input_schema["required"] == ["query"]
        assert tools[name].input_schema["properties"]["threshold"]["minimum"] == FLOOR
    for tool in tools.values():
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema and tool.output_schema["type"] == "object"


def test_every_result_matches_its_output_schema(index):
    import jsonschema

    async def body(client):
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        calls = [
            ("search", {"query": BEES}),
            ("search", {"query": NONSENSE}),
            ("explain", {"query": BEES}),
            ("explain", {"query": NONSENSE}),
            ("list_documents", {}),
            ("read", {"path": "fixtures/beekeeping/handbook.md"}),
            ("read", {"path": "fixtures/beekeeping/handbook.md", "line_start": 3, "line_end": 9}),
        ]
        return schemas, [(name, await client.call_tool(name, args)) for name, args in calls]

    schemas, results = with_server(index, body, "--span", "best")
    for name, result in results:
        assert not result.is_error, result.content[0].text
        jsonschema.validate(result.structured_content, schemas[name])


def test_search_and_explain_return_the_cli_records(index):
    async def body(client):
        return [
            await client.call_tool("search", {"query": BEES}),
            await client.call_tool("explain", {"query": BEES}),
            await client.call_tool("search", {"query": BEES, "k": 2, "path": "*bee*"}),
        ]

    search, explain, narrowed = with_server(index, body)
    assert not search.is_error and search.structured_content["admitted"]
    assert approx_equal(
        search.structured_content["admitted"], cli_json_lines("query", BEES, "-i", index, "--json")
    )
    assert search.structured_content["near_miss"] is None
    assert search.structured_content["floor"] == FLOOR
    assert approx_equal(
        mcp_only(explain.structured_content),
        json.loads(run_cli("explain", BEES, "-i", index, "--json").stdout),
    )
    assert approx_equal(
        narrowed.structured_content["admitted"],
        cli_json_lines("query", BEES, "-i", index, "--json", "-k", "2", "--path", "*bee*"),
    )


def test_the_text_content_cites_each_hit_with_its_lines_score_and_text(index):
    async def body(client):
        return await client.call_tool("search", {"query": BEES})

    result = with_server(index, body, "--span", "best")
    text = result.content[0].text
    for hit in result.structured_content["admitted"]:
        assert f"{hit['path']}:{hit['line_start']}-{hit['line_end']}" in text
        assert f"score {hit['score']:.3f}" in text
        assert hit["span_text"] in text  # the whole evidence, not a 200-character preview


def test_a_call_may_raise_the_floor_never_lower_it(index):
    """Issue 29: started without --threshold, the floor is the index's threshold in force (the
    model's measured default here); threshold=0.05 no longer admits junk, and the near-miss
    hint never proposes a value under the floor."""
    junk = "What is the capital of France?"

    async def body(client):
        lowered = await client.call_tool("search", {"query": junk, "threshold": 0.05})
        lowered_explain = await client.call_tool("explain", {"query": junk, "threshold": 0.05})
        plain = await client.call_tool("search", {"query": junk})
        explained = await client.call_tool("explain", {"query": junk})
        raised = await client.call_tool("search", {"query": BEES, "threshold": 0.9})
        at = raised.structured_content["admit_at"]
        again = await client.call_tool("search", {"query": BEES, "threshold": at})
        return lowered, lowered_explain, plain, explained, raised, again

    lowered, lowered_explain, plain, explained, raised, again = with_server(index, body)
    for r in (lowered, lowered_explain):
        assert r.is_error and f"below this server's floor {FLOOR}" in r.content[0].text
    rec = plain.structured_content
    assert rec["admitted"] == [] and rec["floor"] == FLOOR
    assert rec["near_miss"]["score"] < FLOOR and rec["admit_at"] is None
    # (its best candidate scores like an off-topic question's: no threshold is proposed)
    assert "the index holds nothing relevant enough" in rec["hints"][0]
    assert not any("--threshold" in h for h in rec["hints"])
    assert "nothing relevant enough" in explained.structured_content["hint"]
    # a call that raised the threshold hears which value (at least the floor) admits it
    rec = raised.structured_content
    assert rec["admitted"] == [] and FLOOR <= rec["admit_at"] <= rec["near_miss"]["score"]
    assert rec["threshold_origin"] == "given by the call"
    assert again.structured_content["admitted"][0]["id"] == rec["near_miss"]["id"]


def test_with_threshold_none_a_call_may_use_any_threshold(index):
    async def body(client):
        return await client.call_tool("search", {"query": NONSENSE, "threshold": 0.0})

    result = with_server(index, body, "--threshold", "none")
    assert not result.is_error and result.structured_content["admitted"]
    assert result.structured_content["floor"] is None


# (the SDK's client cannot send a lone surrogate or a 5,000-digit number: the raw-message
# sweep, tests/test_mcp_messages.py, sends those)
BAD_ARGUMENTS = [
    ({"query": ""}, "query is empty"),
    ({"query": "   "}, "query is empty"),
    ({}, "query is required"),
    ({"query": 42}, "query must be a string"),
    ({"query": ["bees"]}, "query must be a string"),
    ({"query": "bees " * 20_000}, "at most 10,000"),
    ({"query": BEES, "k": 0}, "k must be from 1 to 50"),
    ({"query": BEES, "k": 99}, "k must be from 1 to 50"),
    ({"query": BEES, "k": 2.5}, "k must be a whole number"),
    ({"query": BEES, "k": "3"}, "k must be a whole number"),
    ({"query": BEES, "k": True}, "k must be a whole number"),
    ({"query": BEES, "k": 10**400}, "k must be from 1 to 50"),
    ({"query": BEES, "threshold": 1.5}, "between 0 and 1"),
    ({"query": BEES, "threshold": -0.1}, "between 0 and 1"),
    ({"query": BEES, "threshold": "0.5"}, "threshold must be a number"),
    ({"query": BEES, "threshold": False}, "threshold must be a number"),
    ({"query": BEES, "threshold": 0.01}, "below this server's floor"),
    ({"query": BEES, "path": "[z-a]"}, "path"),
    ({"query": BEES, "path": 7}, "path must be a string"),
    ({"query": BEES, "limit": 3}, "unknown argument(s): 'limit'"),
]


@pytest.mark.parametrize("tool", ["search", "explain"])
def test_bad_arguments_are_tool_errors_a_model_can_read_and_the_server_goes_on(index, tool):
    from mcp.shared.exceptions import MCPError

    async def body(client):
        results = [await client.call_tool(tool, args) for args, _ in BAD_ARGUMENTS]
        with pytest.raises(MCPError):  # an unknown tool is a protocol error
            await client.call_tool("no_such_tool", {})
        with pytest.raises(MCPError):  # so is an unknown resource
            await client.read_resource("ragsift://document/no%2Fsuch.md")
        after = await client.call_tool(tool, {"query": BEES})
        return results, after

    results, after = with_server(index, body, "--k", "5")
    for (args, words), result in zip(BAD_ARGUMENTS, results):
        assert result.is_error, args
        assert words in result.content[0].text, (args, result.content[0].text)
        assert "\n" not in result.content[0].text
    assert not after.is_error


def test_other_tools_report_bad_arguments_as_tool_errors(index):
    bad = [
        ("list_documents", {"glob": "[z-a]"}),
        ("list_documents", {"glob": 3}),
        ("read", {}),
        ("read", {"path": "no/such.md"}),
        ("read", {"path": "fixtures/beekeeping/handbook.md", "line_start": 0}),
        ("read", {"path": "fixtures/beekeeping/handbook.md", "line_start": 9, "line_end": 3}),
        ("read", {"path": "fixtures/beekeeping/handbook.md", "line_start": 10**6}),
    ]

    async def body(client):
        return [await client.call_tool(name, args) for name, args in bad]

    for (name, args), result in zip(bad, with_server(index, body)):
        assert result.is_error, (name, args)
        assert result.content[0].text


def test_resources_and_the_read_tool_resolve_absolute_stored_paths(tmp_path):
    """Issue 29: an index built from an absolute path outside the working folder stores
    absolute paths ("/tmp/.../docs/a.md"); the URI list_documents gives must read."""
    docs = tmp_path / "docs"
    docs.mkdir()
    lines = [f"Line {n}: the hives of colony {n} were inspected on day {n}." for n in range(1, 31)]
    (docs / "a.md").write_text("# Hive log\n\n" + "\n".join(lines) + "\n", encoding="utf-8")
    (docs / "b c.txt").write_text(
        "Queen excluders keep the queen out of the supers.\n", encoding="utf-8"
    )
    index = str(tmp_path / "abs.db")
    proc = run_cli("embed", str(docs), "--index", index, cwd=tmp_path.parent)
    assert proc.returncode == 0, proc.stderr

    async def body(client):
        listed = (await client.call_tool("list_documents", {})).structured_content
        texts = [await client.read_resource(d["uri"]) for d in listed["documents"]]
        resources = (await client.list_resources()).resources
        path = next(d["path"] for d in listed["documents"] if d["path"].endswith("a.md"))
        part = await client.call_tool("read", {"path": path, "line_start": 5, "line_end": 7})
        whole = await client.call_tool("read", {"path": path})
        return listed, texts, resources, part, whole

    listed, texts, resources, part, whole = with_server(index, body)
    paths = [d["path"] for d in listed["documents"]]
    assert all(p.startswith("/") for p in paths), paths
    for d, text in zip(listed["documents"], texts):
        assert text.contents[0].text.startswith(f"# {d['path']}")
    assert sorted(str(r.uri) for r in resources) == sorted(d["uri"] for d in listed["documents"])
    rec = part.structured_content
    assert (rec["line_start"], rec["line_end"], rec["lines"]) == (5, 7, 32)
    assert rec["text"] == "\n".join(lines[2:5])  # file lines 5-7: log lines 3-5
    assert whole.structured_content["text"].splitlines()[2:] == lines


def test_list_documents_and_document_resources(index):
    async def body(client):
        listed = await client.call_tool("list_documents", {})
        some = await client.call_tool("list_documents", {"glob": "*beekeeping*"})
        docs = listed.structured_content["documents"]
        text = await client.read_resource(docs[0]["uri"])
        return listed, some, text

    listed, some, text = with_server(index, body)
    docs = listed.structured_content["documents"]
    assert [{k: v for k, v in d.items() if k != "uri"} for d in docs] == cli_json_lines(
        "ls", "-i", index, "--json"
    )
    assert [d["path"] for d in some.structured_content["documents"]] == [
        "fixtures/beekeeping/handbook.md"
    ]
    body_text = text.contents[0].text
    assert body_text.startswith(f"# {docs[0]['path']}") and "[lines 1-" in body_text
    first = cli_json_lines(
        "query",
        BEES,
        "-i",
        index,
        "--json",
        "--path",
        docs[0]["path"],
        "--threshold",
        "none",
        "-k",
        "1",
    )[0]
    assert first["text"][:200] in body_text


def test_read_gives_a_hits_lines(index):
    """The read tool, for clients without resources: a hit's own line numbers give its
    lines of the indexed text."""

    async def body(client):
        hit = (await client.call_tool("search", {"query": BEES})).structured_content["admitted"][0]
        read = await client.call_tool(
            "read",
            {"path": hit["path"], "line_start": hit["line_start"], "line_end": hit["line_end"]},
        )
        return hit, read

    hit, read = with_server(index, body)
    assert read.structured_content["text"] == hit["text"]
    assert f"lines {hit['line_start']}-{hit['line_end']}" in read.content[0].text


@pytest.mark.parametrize(
    "args, words",
    [
        (["--path", "[z-a]"], "invalid glob"),
        (["--threshold", "1.5"], "--threshold"),
        (["--threshold", "lots"], "--threshold"),
        (["--mode", "psychic"], "mode"),
        (["--span", "page"], "span"),
    ],
)
def test_bad_start_up_options_exit_2_with_one_line_before_serving(index, args, words):
    proc = run_cli("mcp", "--index", index, *args, input="")
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and words in proc.stderr, proc.stderr
    assert proc.stdout == ""


def test_k_under_1_is_a_usage_error_as_for_every_command(index):
    proc = run_cli("mcp", "--index", index, "--k", "0", input="")
    assert proc.returncode == 2 and proc.stdout == ""


def test_the_server_path_option_bounds_every_call(index):
    async def body(client):
        hits = await client.call_tool("search", {"query": "sourdough starter", "k": 3})
        docs = await client.call_tool("list_documents", {})
        return hits, docs

    hits, docs = with_server(index, body, "--path", "fixtures/beekeeping/*", "--threshold", "0")
    assert all(
        h["path"].startswith("fixtures/beekeeping/") for h in hits.structured_content["admitted"]
    )
    assert hits.structured_content["admitted"]
    assert [d["path"] for d in docs.structured_content["documents"]] == [
        "fixtures/beekeeping/handbook.md"
    ]


def test_it_answers_while_a_writer_holds_the_index_and_sees_its_commits(index, tmp_path):
    """The server never waits for a writer: with a writer holding the lock and an open
    transaction it answers; once the writer commits (a document removed) the next call sees
    it. Then a real `ragsift embed` adds a file while the client keeps searching."""
    from ragsift.index import open_index

    copy = tmp_path / "live.db"
    shutil.copy(index, copy)
    extra = tmp_path / "more"
    extra.mkdir()
    (extra / "owls.md").write_text(
        "# Owls\n\nBarn owls hunt voles at dusk over rough grassland.\n", encoding="utf-8"
    )

    async def body(client):
        before = await client.call_tool("list_documents", {})
        key = next(
            d["key"]
            for d in before.structured_content["documents"]
            if d["path"] == "fixtures/recipes.json"
        )
        with open_index(str(copy), "w") as writer:
            with writer.transaction():
                held = await client.call_tool("search", {"query": BEES})
                writer.remove_documents([key])
        after = await client.call_tool("list_documents", {})
        proc = subprocess.Popen(
            [sys.executable, "-m", "ragsift", "embed", str(extra), "--index", str(copy)],
            cwd=str(REPO),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        answered = []
        while True:
            done = proc.poll() is not None
            r = await client.call_tool("search", {"query": BEES})
            answered.append(bool(r.structured_content["admitted"]))
            if done:
                break
        owls = await client.call_tool("search", {"query": "barn owls hunting voles"})
        return before, held, after, proc.wait(), proc.stderr.read(), answered, owls

    before, held, after, rc, err, answered, owls = with_server(str(copy), body)
    paths = [d["path"] for d in before.structured_content["documents"]]
    assert "fixtures/recipes.json" in paths and held.structured_content["admitted"]
    assert "fixtures/recipes.json" not in [d["path"] for d in after.structured_content["documents"]]
    assert rc == 0, err
    assert answered and all(answered)
    assert owls.structured_content["admitted"][0]["path"].endswith("owls.md")


def test_without_the_extra_it_says_which_to_install(tmp_path):
    """Run with `mcp` hidden (a stub package that fails to import): exit 2, one line."""
    stub = tmp_path / "stub" / "mcp"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError('hidden for this test')\n")
    proc = run_cli("mcp", "--index", "x.db", env={"PYTHONPATH": str(stub.parent)})
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "ragsift: `ragsift mcp` needs the mcp extra: pip install 'ragsift[mcp]'"
    )


def test_hints_name_the_tools_arguments_not_the_cli_flags(index):
    """A hint says what to change in the tool's own words (`k=5`, `path`), never `-k 5`
    or `--path`, which an agent cannot pass."""

    async def body(client):
        narrow = await client.call_tool("search", {"query": BEES, "k": 1, "threshold": 0.0})
        explained = await client.call_tool("explain", {"query": BEES, "k": 1, "threshold": 0.0})
        nowhere = await client.call_tool("search", {"query": BEES, "path": "nothing/*.md"})
        return narrow, explained, nowhere

    narrow, explained, nowhere = with_server(index, body, "--threshold", "none")
    for rec in (narrow.structured_content, explained.structured_content):
        more = [h for h in rec["hints"] if "would admit" in h and "more" in h]
        assert more and "`k=" in more[0], rec["hints"]
        assert not any("-k " in h or "--" in h for h in rec["hints"]), rec["hints"]
    hints = nowhere.structured_content["hints"]
    assert hints and "matches path 'nothing/*.md'" in hints[0] and "--path" not in hints[0]


def test_a_call_may_ask_for_more_hits_than_the_servers_default(index):
    """Issue 41 item 5: before, the server's --k (3) was also the most a call could ask for
    ("k must be from 1 to 3"). Now --k is the default and a call may ask for up to MAX_K."""

    async def body(client):
        tools = {t.name: t for t in (await client.list_tools()).tools}
        return (
            tools["search"].input_schema["properties"]["k"],
            await client.call_tool("search", {"query": "bees"}),
            await client.call_tool("search", {"query": "bees", "k": 10}),
            await client.call_tool("explain", {"query": "bees", "k": 10}),
            await client.call_tool("search", {"query": "bees", "k": MAX_K + 1}),
        )

    schema, default, ten, explained, over = with_server(index, body, "--threshold", "none")
    assert MAX_K == 50 and schema["maximum"] == MAX_K and "default 3" in schema["description"]
    assert len(default.structured_content["admitted"]) == 3
    assert len(ten.structured_content["admitted"]) == 10, ten.content[0].text
    assert explained.structured_content["admitted"] == 10
    assert over.is_error and f"k must be from 1 to {MAX_K}" in over.content[0].text


def test_read_takes_a_path_as_typed_dot_slash_or_absolute_inside_the_folder(index):
    """Issue 41 item 5: `./x` and an absolute path inside the server's folder name the stored
    document (before: "no indexed document"); a path outside it still names nothing."""
    stored = "fixtures/beekeeping/handbook.md"
    typed = ["./" + stored, str(REPO / stored), "fixtures/../" + stored]

    async def body(client):
        return [
            await client.call_tool("read", {"path": p, "line_start": 1, "line_end": 2})
            for p in [*typed, "/etc/passwd"]
        ]

    *found, outside = with_server(index, body)
    for path, result in zip(typed, found):
        assert not result.is_error, (path, result.content[0].text)
        assert result.structured_content["path"] == stored
    assert outside.is_error and "no indexed document" in outside.content[0].text


def test_the_text_says_the_threshold_and_the_floor_once(index):
    """Issue 41 item 5: before, explain said "(threshold 0.17, measured default (server
    floor 0.17, measured default))"."""

    async def body(client):
        return [
            await client.call_tool(name, {"query": BEES, **extra})
            for name in ("search", "explain")
            for extra in ({}, {"threshold": 0.3})
        ]

    texts = [r.content[0].text.splitlines()[0] for r in with_server(index, body)]
    origin = "measured default"
    for text in texts:
        assert text.count(origin) == 1 and text.count("floor") == 1, text
    assert f"threshold {FLOOR:g} ({origin}, this server's floor)" in texts[0]
    assert (
        f"threshold 0.3 (given by the call; this server's floor {FLOOR:g}, {origin})" in (texts[3])
    )
