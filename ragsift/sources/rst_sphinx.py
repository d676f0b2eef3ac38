"""Sphinx's vocabulary taught to docutils: the directives and roles Sphinx adds, which
docutils alone does not know, registered once per process (``register_sphinx``) so that
each renders as the text it stands for, or as nothing, never as an error (``rst.py``
renders the doctree they make):

- an object description (``autoclass``, ``autofunction``, ``py:function``, …) keeps its
  signature line (``class flask.Flask``) and its content;
- ``versionadded`` and kin become ``Added in version 2.0.``;
- pure markup (``toctree``, ``index``, ``currentmodule``, ``highlight``, any ``:option:``)
  is dropped; content directives (``only``, ``tab``, ``glossary``, …) keep their content;
- code directives (``code-block``, ``sourcecode``, …) stay code; ``seealso`` and ``todo``
  are admonitions;
- cross-reference roles render as their title (``role_text``).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

# roles whose text is their title: Sphinx's cross-references and inline markup
_ROLES = (
    "func",
    "meth",
    "class",
    "mod",
    "attr",
    "data",
    "exc",
    "obj",
    "ref",
    "doc",
    "term",
    "envvar",
    "option",
    "command",
    "file",
    "program",
    "kbd",
    "guilabel",
    "menuselection",
    "abbr",
    "any",
    "samp",
    "numref",
    "download",
    "keyword",
    "mimetype",
    "makevar",
    "regexp",
    "token",
    "confval",
    "dfn",
    "issue",
    "pr",
    "user",
    "gh",
    "wikipedia",
)
_DOMAINS = ("py", "c", "cpp", "js", "rst", "std")
# object descriptions: (directive, the word their signature line starts with)
_OBJECTS = {
    "autoclass": "class",
    "autofunction": "function",
    "automethod": "method",
    "autoattribute": "attribute",
    "autodata": "data",
    "automodule": "module",
    "autoexception": "exception",
    "autodecorator": "decorator",
    "autoproperty": "property",
    "function": "function",
    "class": "class",
    "method": "method",
    "attribute": "attribute",
    "data": "data",
    "exception": "exception",
    "decorator": "decorator",
    "property": "property",
    "staticmethod": "staticmethod",
    "classmethod": "classmethod",
    "type": "type",
    "envvar": "environment variable",
    "option": "option",
    "describe": "",
    "object": "",
    "confval": "setting",
}
_VERSIONS = {
    "versionadded": "Added in version",
    "versionchanged": "Changed in version",
    "deprecated": "Deprecated since version",
    "versionremoved": "Removed in version",
}
_DROP = (
    "toctree",
    "index",
    "currentmodule",
    "module",
    "highlight",
    "tabularcolumns",
    "sectionauthor",
    "codeauthor",
    "moduleauthor",
    "literalinclude",
    "autosummary",
    "testsetup",
    "testcleanup",
    "productionlist",
    "default-role",
    "default-domain",
    "program",
    "automodapi",
    "autoprogram",
    "click",
    "raw",
    "include",
    "image",
    "meta",
    "only-html",
    "spelling:word-list",
    "graphviz",
    "inheritance-diagram",
    "tab-set-code",
    "jinja",
    "ifconfig",
)
_CONTENT = (
    "only",
    "glossary",
    "hlist",
    "tab",
    "tabs",
    "tab-item",
    "tab-set",
    "card",
    "grid",
    "grid-item",
    "grid-item-card",
    "dropdown",
    "centered",
    "container",
    "group-tab",
    "code-tab",
    "cssclass",
    "rst-class",
    "list-table-ish",
)
# (``code-block``/``code`` too: docutils' own refuses Sphinx's options, ``:caption:``,
# ``:emphasize-lines:``, ``:linenos:``, and the block was lost with the error)
_CODE = (
    "sourcecode",
    "testcode",
    "testoutput",
    "doctest",
    "ipython",
    "jupyter-execute",
    "code-cell",
    "prompt",
    "console",
    "code-block",
    "code",
)
_ADMONITION_WORDS = {"seealso": "See also", "todo": "To do", "admonition": ""}


@cache
def register_sphinx() -> None:
    """Teach docutils Sphinx's directives and roles (once per process): each renders as the
    text it stands for, or as nothing, never as an error."""
    from docutils import nodes
    from docutils.parsers.rst import directives, roles

    kinds = _directive_kinds(_base_directive())

    def register(name: str, cls: type) -> None:
        directives.register_directive(name, cls)
        for dom in _DOMAINS:
            directives.register_directive(f"{dom}:{name}", cls)

    for name, word in _OBJECTS.items():
        register(name, type(f"_Object_{name}", (kinds["object"],), {"word": word}))
    for name, words in _VERSIONS.items():
        register(name, type(f"_Version_{name}", (kinds["version"],), {"words": words}))
    for name in _DROP:
        register(name, kinds["drop"])
    for name in _CONTENT:
        register(name, kinds["content"])
    for name in _CODE:
        register(name, kinds["code"])
    for name, words in _ADMONITION_WORDS.items():
        if name != "admonition":
            register(name, type(f"_Note_{name}", (kinds["note"],), {"words": words}))

    def title_role(name, rawtext, text, lineno, inliner, options=None, content=None):
        return [nodes.literal(rawtext, role_text(text))], []

    for name in _ROLES:
        roles.register_local_role(name, title_role)
        for dom in _DOMAINS:
            roles.register_local_role(f"{dom}:{name}", title_role)


def _base_directive() -> Any:
    """The directive every Sphinx directive here is made from: an optional argument, any
    content, and every ``:option:`` accepted (and dropped)."""
    from docutils import nodes
    from docutils.parsers.rst import Directive, directives

    class _AnyOptions(dict):
        """Every ``:option:`` is accepted (and dropped): Sphinx's directives have many."""

        def __bool__(self) -> bool:
            return True

        def __contains__(self, key: object) -> bool:
            return True

        def get(self, key, default=None):
            return directives.unchanged

        def __getitem__(self, key: str):
            return directives.unchanged

    class _Base(Directive):
        required_arguments = 0
        optional_arguments = 1
        final_argument_whitespace = True
        has_content = True
        option_spec = _AnyOptions()

        def content_nodes(self) -> list:
            if not self.content:
                return []
            box = nodes.container()
            self.state.nested_parse(self.content, self.content_offset, box)
            return list(box.children)

    return _Base


def _directive_kinds(base: Any) -> dict[str, type]:
    """The kinds of Sphinx directive, by what they render as: ``object`` (its signature line,
    then its content), ``version`` (``Added in version …``), ``drop`` (nothing), ``content``
    (its content), ``code`` (a code block) and ``note`` (an admonition)."""
    from docutils import nodes

    class _Object(base):
        word = ""

        def run(self) -> list:
            sig = " ".join(self.arguments).strip()
            lines = [s.strip() for s in sig.splitlines() if s.strip()] or []
            head = [nodes.paragraph("", f"{self.word} {s}".strip()) for s in lines]
            for n in head:
                n.line = self.lineno
            return head + self.content_nodes()

    class _Version(base):
        words = ""

        def run(self) -> list:
            words = " ".join(self.arguments).split()
            version, rest = (words[0] if words else ""), " ".join(words[1:])
            para = nodes.paragraph("", f"{self.words} {version}." + (" " if rest else ""))
            if rest:  # the text after the version is rst too (roles, literals)
                inline, _ = self.state.inline_text(rest, self.lineno)
                para.extend(inline)
            para.line = self.lineno
            return [para] + self.content_nodes()

    class _Drop(base):
        def run(self) -> list:
            return []

    class _Content(base):
        def run(self) -> list:
            return self.content_nodes()

    class _Code(base):
        def run(self) -> list:
            node = nodes.literal_block("\n".join(self.content), "\n".join(self.content))
            node["classes"] = ["code", *self.arguments[:1]]  # (the fence's language)
            node.line = self.content_offset + 1
            node["ragsift_start"] = self.content_offset + 1
            return [node]

    class _Note(base):
        words = ""

        def run(self) -> list:
            node = nodes.admonition()
            node["ragsift_word"] = self.words
            node.line = self.lineno
            node.extend(self.content_nodes())
            return [node]

    return {
        "object": _Object,
        "version": _Version,
        "drop": _Drop,
        "content": _Content,
        "code": _Code,
        "note": _Note,
    }


def role_text(text: str) -> str:
    """What a cross-reference role shows: ``title <target>`` → title, ``~a.b.c`` → ``c``,
    ``!name`` → ``name``."""
    from docutils.utils import unescape

    text = unescape(text)
    m = re.match(r"^(.*?)\s*<[^<>]*>$", text, re.DOTALL)
    if m and m.group(1):
        return m.group(1)
    text = text.lstrip("!")
    if text.startswith("~"):
        return text[1:].rpartition(".")[2]
    return text
