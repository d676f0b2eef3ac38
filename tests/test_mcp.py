"""`ragsift mcp`: the real server started as a subprocess over stdio, driven by the MCP SDK's
own client, on a real index (real model). Its records must be the CLI's records."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO, run_cli
from tests.test_query_cli import fixture_index

pytest.importorskip("mcp", reason="the mcp extra is part of [test]")

BEES = "when do honey bees swarm"
NONSENSE = "kubernetes ingress controller"


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> str:
    return fixture_index(tmp_path_factory)


def with_server(index: str, body, *extra: str):
    """Start `python -m ragsift mcp --index INDEX EXTRA...` and run ``await body(client)``."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async def main():
        params = StdioServerParameters(command=sys.executable,
                                       args=["-m", "ragsift", "mcp", "--index", index, *extra],
                                       cwd=str(REPO))
        async with Client(params) as client:
            return await body(client)

    return asyncio.run(main())


def cli_json_lines(*args: str) -> list[dict]:
    proc = run_cli(*args)
    assert proc.returncode in (0, 1), proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def test_tools_are_listed_with_descriptions_that_say_what_the_threshold_means(index):
    async def body(client):
        return (await client.list_tools()).tools

    tools = {t.name: t for t in with_server(index, body)}
    assert set(tools) == {"search", "explain", "list_documents"}
    for name in ("search", "explain"):
        text = tools[name].description
        assert "threshold" in text and "empty result is a real answer" in text
        assert set(tools[name].input_schema["properties"]) == {"query", "k", "threshold", "path"}
        assert tools[name].input_schema["required"] == ["query"]


def test_search_and_explain_return_the_cli_records(index):
    async def body(client):
        return ([await client.call_tool("search", {"query": BEES}),
                 await client.call_tool("explain", {"query": BEES}),
                 await client.call_tool("search", {"query": BEES, "k": 2, "path": "*bee*"})])

    search, explain, narrowed = with_server(index, body)
    assert not search.is_error and search.structured_content["admitted"]
    assert search.structured_content["admitted"] == cli_json_lines(
        "query", BEES, "-i", index, "--json")
    assert search.structured_content["near_miss"] is None
    assert "hit(s)" in search.content[0].text  # the short text rendering
    assert explain.structured_content == json.loads(run_cli(
        "explain", BEES, "-i", index, "--json").stdout)
    assert narrowed.structured_content["admitted"] == cli_json_lines(
        "query", BEES, "-i", index, "--json", "-k", "2", "--path", "*bee*")


def test_a_query_nothing_answers_returns_the_near_miss_and_the_threshold_to_admit_it(index):
    async def body(client):
        first = await client.call_tool("search", {"query": NONSENSE})
        at = first.structured_content["admit_at"]
        again = await client.call_tool("explain", {"query": NONSENSE, "threshold": at})
        return first, again

    first, again = with_server(index, body)
    rec = first.structured_content
    assert rec["admitted"] == [] and rec["near_miss"]["admitted"] is False
    assert rec["near_miss"]["reason"] == "below-threshold"
    assert rec["near_miss"]["score"] < rec["threshold"] and rec["admit_at"] <= rec["near_miss"][
        "score"]
    assert any("nothing cleared the threshold" in h for h in rec["hints"])
    cli = json.loads(run_cli("explain", NONSENSE, "-i", index, "--json").stdout)
    assert rec["near_miss"]["id"] == cli["candidates"][0]["id"]
    admitted = [c for c in again.structured_content["candidates"] if c["admitted"]]
    assert admitted and admitted[0]["id"] == rec["near_miss"]["id"]


def test_bad_arguments_are_protocol_errors_and_the_server_goes_on(index):
    from mcp.shared.exceptions import MCPError
    from mcp.types import INVALID_PARAMS

    bad = [{"query": ""}, {"query": "   "}, {"query": BEES, "k": 0}, {"query": BEES, "k": 99},
           {"query": BEES, "threshold": 1.5}, {"query": BEES, "path": "[z-a]"},
           {"query": "bees " * 20_000}]

    async def body(client):
        codes = []
        for args in bad:
            with pytest.raises(MCPError) as err:
                await client.call_tool("search", args)
            codes.append(err.value.code)
        with pytest.raises(MCPError):
            await client.call_tool("explain", {"query": ""})
        with pytest.raises(MCPError):
            await client.read_resource("ragsift://document/no%2Fsuch.md")
        after = await client.call_tool("search", {"query": BEES})
        return codes, after

    codes, after = with_server(index, body, "--k", "5")
    assert codes == [INVALID_PARAMS] * len(bad)
    assert after.structured_content["admitted"]


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
        "ls", "-i", index, "--json")
    assert [d["path"] for d in some.structured_content["documents"]] == [
        "fixtures/beekeeping/handbook.md"]
    body_text = text.contents[0].text
    assert body_text.startswith(f"# {docs[0]['path']}") and "[lines 1-" in body_text
    first = cli_json_lines("query", BEES, "-i", index, "--json", "--path", docs[0]["path"],
                           "--threshold", "none", "-k", "1")[0]
    assert first["text"][:200] in body_text


def test_the_server_path_option_bounds_every_call(index):
    async def body(client):
        hits = await client.call_tool("search", {"query": "sourdough starter", "k": 3})
        docs = await client.call_tool("list_documents", {})
        return hits, docs

    hits, docs = with_server(index, body, "--path", "fixtures/beekeeping/*", "--threshold",
                             "0")
    assert all(h["path"].startswith("fixtures/beekeeping/")
               for h in hits.structured_content["admitted"])
    assert hits.structured_content["admitted"]
    assert [d["path"] for d in docs.structured_content["documents"]] == [
        "fixtures/beekeeping/handbook.md"]


def test_it_answers_while_a_writer_holds_the_index_and_sees_its_commits(index, tmp_path):
    """The server never waits for a writer: with a writer holding the lock and an open
    transaction it answers; once the writer commits (a document removed) the next call sees
    it. Then a real `ragsift embed` adds a file while the client keeps searching."""
    from ragsift.index import open_index

    copy = tmp_path / "live.db"
    shutil.copy(index, copy)
    extra = tmp_path / "more"
    extra.mkdir()
    (extra / "owls.md").write_text("# Owls\n\nBarn owls hunt voles at dusk over rough "
                                   "grassland.\n", encoding="utf-8")

    async def body(client):
        before = await client.call_tool("list_documents", {})
        key = next(d["key"] for d in before.structured_content["documents"]
                   if d["path"] == "fixtures/recipes.json")
        with open_index(str(copy), "w") as writer:
            with writer.transaction():
                held = await client.call_tool("search", {"query": BEES})
                writer.remove_documents([key])
        after = await client.call_tool("list_documents", {})
        proc = subprocess.Popen([sys.executable, "-m", "ragsift", "embed", str(extra),
                                 "--index", str(copy)], cwd=str(REPO),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
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
    assert "fixtures/recipes.json" not in [
        d["path"] for d in after.structured_content["documents"]]
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
        "ragsift: `ragsift mcp` needs the mcp extra: pip install 'ragsift[mcp]'")
