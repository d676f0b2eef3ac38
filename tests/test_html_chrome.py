"""Page chrome is not text (issue 41 item 4): the HTML reader keeps a page's main content and
drops the site's chrome, and a theme template is not a document.

Each fixture is a real page of one generator's build cut down to its structure: the same
elements, classes and roles, fewer words (mdBook 0.4 and rustdoc 1.95 from the Rust toolchain's
docs, Sphinx 9 with alabaster and Furo, mkdocs-material 9, Docusaurus 3.9, DocBook/Publican from
the Debian handbook). Before, each page's text began with its chrome ("Keyboard shortcuts
Press ← or → …", "Skip to content", "Toggle navigation"), and headings ended in "¶" or began
with "§"."""

from __future__ import annotations

import pytest

from ragsift.errors import NotADocument
from ragsift.sources.html import TEMPLATE, parse_html, template_reason
from ragsift.sources.html_layout import layout

MDBOOK = """<!DOCTYPE HTML>
<html lang="en" class="light sidebar-visible" dir="ltr">
<head><meta charset="UTF-8"><title>Installation - The Rust Programming Language</title>
<script src="toc.js"></script></head>
<body>
<div id="mdbook-help-container">
  <div id="mdbook-help-popup">
    <h2 class="mdbook-help-title">Keyboard shortcuts</h2>
    <div><p>Press <kbd>←</kbd> or <kbd>→</kbd> to navigate between chapters</p>
    <p>Press <kbd>S</kbd> or <kbd>/</kbd> to search in the book</p></div>
  </div>
</div>
<div id="body-container">
  <nav id="sidebar" class="sidebar" aria-label="Table of contents">
    <mdbook-sidebar-scrollbox class="sidebar-scrollbox"></mdbook-sidebar-scrollbox>
  </nav>
  <div id="page-wrapper" class="page-wrapper">
    <div class="page">
      <div id="menu-bar" class="menu-bar sticky">
        <div class="left-buttons">
          <label id="sidebar-toggle" class="icon-button" for="sidebar-toggle-anchor"
            title="Toggle Table of Contents" aria-label="Toggle Table of Contents"
            aria-controls="sidebar"><i class="fa fa-bars"></i></label>
          <button id="theme-toggle" class="icon-button" type="button" title="Change theme"
            aria-label="Change theme" aria-haspopup="true" aria-expanded="false"
            aria-controls="theme-list"><i class="fa fa-paint-brush"></i></button>
          <ul id="theme-list" class="theme-popup" aria-label="Themes" role="menu">
            <li role="none"><button role="menuitem" class="theme" id="default_theme">Auto</button></li>
            <li role="none"><button role="menuitem" class="theme" id="light">Light</button></li>
            <li role="none"><button role="menuitem" class="theme" id="rust">Rust</button></li>
            <li role="none"><button role="menuitem" class="theme" id="coal">Coal</button></li>
          </ul>
        </div>
        <h1 class="menu-title">The Rust Programming Language</h1>
      </div>
      <div id="search-wrapper" class="hidden">
        <form id="searchbar-outer" class="searchbar-outer">
          <input type="search" id="searchbar" name="searchbar" placeholder="Search this book ...">
        </form>
      </div>
      <div id="content" class="content">
        <main>
<h2 id="installation"><a class="header" href="#installation">Installation</a></h2>
<p>The first step is to install Rust. We’ll download Rust through <code>rustup</code>, a
command line tool for managing Rust versions and associated tools.</p>
<h3 id="installing-rustup-on-linux-or-macos"><a class="header"
href="#installing-rustup-on-linux-or-macos">Installing rustup on Linux or macOS</a></h3>
<p>If you’re using Linux or macOS, open a terminal and enter the following command.</p>
        </main>
        <nav class="nav-wrapper" aria-label="Page navigation">
          <a rel="prev" href="ch01-00-getting-started.html" class="mobile-nav-chapters previous"
            title="Previous chapter" aria-label="Previous chapter">
            <i class="fa fa-angle-left"></i></a>
        </nav>
      </div>
    </div>
  </div>
</div>
</body>
</html>
"""

SPHINX_ALABASTER = """<!DOCTYPE html>
<html lang="en" data-content_root="./">
  <head><meta charset="utf-8" /><title>User Guide &#8212; pipdocs</title></head><body>
  <div class="document">
      <div class="documentwrapper">
        <div class="bodywrapper">
          <div class="body" role="main">
  <section id="user-guide">
<h1>User Guide<a class="headerlink" href="#user-guide" title="Link to this heading">¶</a></h1>
<section id="running-pip">
<h2>Running pip<a class="headerlink" href="#running-pip" title="Link to this heading">¶</a></h2>
<p>pip is a command line program. When you install pip, a <code class="docutils literal
notranslate"><span class="pre">pip</span></code> command is added to your system.</p>
</section>
</section>
          </div>
        </div>
      </div>
      <div class="sphinxsidebar" role="navigation" aria-label="Main">
        <div class="sphinxsidebarwrapper">
<h1 class="logo"><a href="index.html">pipdocs</a></h1>
<h3>Navigation</h3>
<ul class="current"><li class="toctree-l1 current"><a class="current reference internal"
href="#">User Guide</a></li></ul>
<search id="searchbox" style="display: none" role="search">
  <h3 id="searchlabel">Quick search</h3>
    <div class="searchformwrapper"><form class="search" action="search.html" method="get">
      <input type="text" name="q" aria-labelledby="searchlabel" />
      <input type="submit" value="Go" />
    </form></div>
</search>
        </div>
      </div>
      <div class="clearer"></div>
    </div>
    <div class="footer">
      &#169;. | Powered by <a href="https://www.sphinx-doc.org/">Sphinx 9.0.4</a>
    </div>
  </body>
</html>
"""

SPHINX_FURO = """<!doctype html>
<html class="no-js" lang="en" data-content_root="./">
  <head><meta charset="utf-8"/><title>User Guide - pipdocs documentation</title></head>
  <body>
<a class="skip-to-content muted-link" href="#furo-main-content">Skip to content</a>
<div class="page">
  <header class="mobile-header">
    <div class="header-left">
      <label class="nav-overlay-icon" for="__navigation"><span class="icon"></span></label>
    </div>
    <div class="header-center"><a href="index.html"><div class="brand">pipdocs
      documentation</div></a></div>
  </header>
  <aside class="sidebar-drawer">
    <div class="sidebar-container"><div class="sidebar-sticky">
      <a class="sidebar-brand" href="index.html"><span class="sidebar-brand-text">pipdocs
      documentation</span></a>
      <form class="sidebar-search-container" method="get" action="search.html" role="search">
        <input class="sidebar-search" placeholder="Search" name="q" aria-label="Search">
      </form>
      <div class="sidebar-tree"><ul class="current"><li class="toctree-l1 current
        current-page"><a class="current reference internal" href="#">User Guide</a></li></ul>
      </div>
    </div></div>
  </aside>
  <div class="main">
    <div class="content">
      <div class="article-container">
        <a href="#" class="back-to-top muted-link"><span>Back to top</span></a>
        <div class="content-icon-container">
          <div class="view-this-page"><a class="muted-link" href="_sources/user_guide.rst.txt"
            title="View this page"><span class="visually-hidden">View this page</span></a>
          </div>
        </div>
        <article role="main" id="furo-main-content">
          <section id="user-guide">
<h1>User Guide<a class="headerlink" href="#user-guide" title="Link to this heading">¶</a></h1>
<section id="running-pip">
<h2>Running pip<a class="headerlink" href="#running-pip" title="Link to this heading">¶</a></h2>
<p>pip is a command line program. When you install pip, a pip command is added to your
system.</p>
</section>
</section>
        </article>
      </div>
      <footer>
        <div class="related-pages"><a class="next-page" href="news.html"><div
          class="page-info"><div class="context"><span>Next</span></div><div
          class="title">Changelog</div></div></a></div>
        <div class="bottom-of-page"><div class="left-details"><div class="copyright">
          Copyright &#169;</div>Made with <a href="https://www.sphinx-doc.org/">Sphinx</a>
        </div></div>
      </footer>
    </div>
    <aside class="toc-drawer">
      <div class="toc-sticky toc-scroll"><div class="toc-title-container"><span
        class="toc-title">On this page</span></div>
        <div class="toc-tree-container"><div class="toc-tree"><ul><li><a
          class="reference internal" href="#">User Guide</a></li></ul></div></div>
      </div>
    </aside>
  </div>
</div>
</body>
</html>
"""

MKDOCS_MATERIAL = """<!doctype html>
<html lang="en" class="no-js">
  <head><meta charset="utf-8"><title>Command-line reference - ragsift</title></head>
  <body dir="ltr">
    <input class="md-toggle" data-md-toggle="drawer" type="checkbox" id="__drawer"
      autocomplete="off">
    <label class="md-overlay" for="__drawer"></label>
    <div data-md-component="skip">
        <a href="#global-options" class="md-skip">Skip to content</a>
    </div>
<header class="md-header md-header--shadow" data-md-component="header">
  <nav class="md-header__inner md-grid" aria-label="Header">
    <div class="md-header__title" data-md-component="header-title">
      <div class="md-header__ellipsis"><div class="md-header__topic"><span
        class="md-ellipsis">ragsift</span></div></div>
    </div>
    <div class="md-search" data-md-component="search" role="dialog">
      <label class="md-search__overlay" for="__search"></label>
      <div class="md-search__inner" role="search">
        <form class="md-search__form" name="search"><input type="text" class="md-search__input"
          name="query" aria-label="Search" placeholder="Search">
        <label class="md-search__icon md-icon" for="__search"></label></form>
        <div class="md-search__output"><div class="md-search-result__meta">Initializing
          search</div></div>
      </div>
    </div>
  </nav>
</header>
    <div class="md-container" data-md-component="container">
      <main class="md-main" data-md-component="main">
        <div class="md-main__inner md-grid">
            <div class="md-sidebar md-sidebar--primary" data-md-component="sidebar"
              data-md-type="navigation">
              <div class="md-sidebar__scrollwrap"><div class="md-sidebar__inner">
<nav class="md-nav md-nav--primary" aria-label="Navigation" data-md-level="0">
  <label class="md-nav__title" for="__drawer">ragsift</label>
  <ul class="md-nav__list" data-md-scrollfix>
    <li class="md-nav__item"><a href="../ARCHITECTURE/" class="md-nav__link"><span
      class="md-ellipsis">ragsift architecture</span></a></li>
    <li class="md-nav__item"><a href="../api/" class="md-nav__link"><span
      class="md-ellipsis">Python API</span></a></li>
  </ul>
</nav>
              </div></div>
            </div>
            <div class="md-sidebar md-sidebar--secondary" data-md-component="sidebar"
              data-md-type="toc">
              <div class="md-sidebar__scrollwrap"><div class="md-sidebar__inner">
<nav class="md-nav md-nav--secondary" aria-label="Table of contents">
  <label class="md-nav__title" for="__toc">Table of contents</label>
  <ul class="md-nav__list" data-md-component="toc" data-md-scrollfix>
    <li class="md-nav__item"><a href="#global-options" class="md-nav__link"><span
      class="md-ellipsis">Global options</span></a></li>
  </ul>
</nav>
              </div></div>
            </div>
          <div class="md-content" data-md-component="content">
            <article class="md-content__inner md-typeset">
<h1 id="command-line-reference">Command-line reference</h1>
<p>Every flag of every subcommand, the JSON fields, the output formats and the
configuration.</p>
<h2 id="global-options">Global options<a class="headerlink" href="#global-options"
title="Permanent link">&para;</a></h2>
<p><code>--debug</code> shows tracebacks.</p>
            </article>
          </div>
        </div>
      </main>
<footer class="md-footer">
  <div class="md-footer-meta md-typeset"><div class="md-footer-meta__inner md-grid">
    <div class="md-copyright">Made with <a href="https://squidfunk.github.io/mkdocs-material/"
      target="_blank" rel="noopener">Material for MkDocs</a></div>
  </div></div>
</footer>
    </div>
  </body>
</html>
"""

RUSTDOC = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<title>std::fs - Rust</title></head><body class="rustdoc mod"><a class="skip-main-content"
href="#main-content">Skip to main content</a><nav class="mobile-topbar"><button
class="sidebar-menu-toggle" title="show sidebar"></button></nav><nav class="sidebar"><div
class="sidebar-crate"><h2><a href="../../std/index.html">std</a><span
class="version">1.95.0</span></h2></div><div class="sidebar-elems"><section
id="rustdoc-toc"><h2 class="location"><a href="#">Module fs</a></h2><h3><a
href="#structs">Module Items</a></h3></section></div></nav><div
class="sidebar-resizer" title="Drag to resize sidebar"></div><main><div
class="width-limiter"><section id="main-content" class="content" tabindex="-1"><div
class="main-heading"><div class="rustdoc-breadcrumbs"><a href="../index.html">std</a></div>
<h1>Module <span>fs</span>&nbsp;<button id="copy-path" title="Copy item path to
clipboard">Copy item path</button></h1><rustdoc-toolbar></rustdoc-toolbar><span
class="sub-heading"><span class="since" title="Stable since Rust version 1.0.0">1.0.0</span>
· <a class="src" href="../../src/std/fs.rs.html#1-3531">Source</a> </span></div><details
class="toggle top-doc" open><summary class="hideme"><span>Expand
description</span></summary><div class="docblock"><p>Filesystem manipulation operations.</p>
<h2 id="time-of-check-to-time-of-use-toctou"><a class="doc-anchor"
href="#time-of-check-to-time-of-use-toctou">§</a>Time of Check to Time of Use (TOCTOU)</h2>
<p>Many filesystem operations are made up of a check followed by a use.</p></div></details>
</section></div></main></body></html>
"""

DOCUSAURUS = """<!doctype html>
<html lang="en" dir="ltr" class="docs-wrapper plugin-docs docs-doc-page">
<head><meta charset="UTF-8"><meta name="generator" content="Docusaurus v3.9.2">
<title data-rh="true">How to write great bug reports | Weaviate Documentation</title></head>
<body class="navigation-with-keyboard"><div id="__docusaurus"><div role="region"
aria-label="Skip to main content"><a class="skipToContent_fXgn"
href="#__docusaurus_skipToContent_fallback">Skip to main content</a></div><div
class="theme-announcement-bar announcementBar_mb4j" role="banner"><div
class="content_knG7 announcementBarContent_xLdY"><a href="https://academy.weaviate.io/">The new
<b>Weaviate Academy</b> learning platform is here!</a></div></div><nav aria-label="Main"
class="theme-layout-navbar navbar navbar--fixed-top"><div class="navbar__inner"><a
class="navbar__item navbar__link academy-button">Academy</a><div class="searchBox"><button
class="searchButton"><span class="searchPlaceholderText">Ask AI or Search</span></button></div>
</div></nav><div class="modalOverlay_BeVA"><div class="modalContent_CPV2"><div
class="modalHeaderLeft_Jnp2"><strong>Go to documentation:</strong></div><div
class="modalText_gt5h"><strong>Weaviate Database</strong><p>Develop AI applications using
Weaviate&#x27;s APIs and tools</p></div></div></div><div
id="__docusaurus_skipToContent_fallback" class="theme-layout-main main-wrapper"><div
class="docRoot_UBD9"><main class="docMainContainer_TBSr"><div class="container"><div
class="row"><div class="col docItemCol_z5aJ"><div class="docItemContainer_c0TR"><article><div
class="tocCollapsible_ETCw theme-doc-toc-mobile"><button type="button" class="clean-btn
tocCollapsibleButton_TO0P">On this page</button></div><div class="theme-doc-markdown
markdown"><header><h1>How to write great bug reports</h1></header><h2 class="anchor
anchorTargetStickyNavbar_Vzrq" id="write-great-bug-reports">Write great bug reports!<a
href="#write-great-bug-reports" class="hash-link" aria-label="Direct link to Write great bug
reports!" title="Direct link to Write great bug reports!" translate="no">&#8203;</a></h2>
<p>This page outlines what an ideal bug report would look like. We know that it is not always
possible to write a perfect bug report.</p>
<h2 class="anchor" id="thank-you">Thank you<a href="#thank-you" class="hash-link"
translate="no">&#8203;</a></h2>
<p>A bug report is a contribution to Weaviate.</p></div><footer class="theme-doc-footer
docusaurus-mt-lg"><div class="row margin-top--sm theme-doc-footer-edit-meta-row"><div
class="col noPrint_WFHX"><a href="https://github.com/weaviate/docs/tree/main/x.md"
class="theme-edit-this-page">Edit this page</a></div></div></footer></article></div></div><div
class="col col--3"><div class="tableOfContents_bqdL theme-doc-toc-desktop"><ul
class="table-of-contents"><li><a href="#write-great-bug-reports"
class="table-of-contents__link">Write great bug reports!</a></li></ul></div><div
class="container_jpeN"><p class="text_tGp7">Was this page helpful?</p><div><button
class="voteButton_HXmX" aria-label="Vote up">Yes</button><button class="voteButton_HXmX"
aria-label="Vote down">No</button></div></div></div></div></div></main></div></div></div>
</body>
</html>
"""

DOCBOOK = """<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN"
"http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd"><html
xmlns="http://www.w3.org/1999/xhtml"><head><title>1.3. The Internal Workings</title></head>
<body><div id="banner"><a href="http://debian-handbook.info/get/"><span class="text">Download
the ebook</span></a></div><ul class="docnav top"><li class="previous"><a accesskey="p"
href="sect.foundation-documents.html"><strong>Prev</strong></a></li><li class="home">The Debian
Administrator's Handbook</li><li class="next"><a accesskey="n"
href="sect.role-of-distributions.html"><strong>Next</strong></a></li></ul><div
class="section"><div class="titlepage"><div><div><h2 class="title">1.3. The Internal Workings
of the Debian Project</h2></div></div></div><div class="para">The bounty of results produced by
the Debian project comes simultaneously from the work on the infrastructure.</div></div><ul
class="docnav"><li class="previous"><a accesskey="p"
href="sect.foundation-documents.html"><strong>Prev</strong>1.2. The Foundation
Documents</a></li><li class="up"><a accesskey="u" href="#"><strong>Up</strong></a></li></ul>
</body></html>
"""


def read(text: str, name: str = "page.html"):
    return parse_html(text, name)


@pytest.mark.parametrize(
    "page, first, chrome, trail",
    [
        (
            MDBOOK,
            "Installation\n\nThe first step is to install Rust.",
            ["Keyboard shortcuts", "Press", "Auto", "Coal", "The Rust Programming Language"],
            ("Installation", "Installing rustup on Linux or macOS"),
        ),
        (
            SPHINX_ALABASTER,
            "User Guide\n\nRunning pip\n\npip is a command line program.",
            ["¶", "Navigation", "Quick search", "Powered by", "pipdocs"],
            ("User Guide", "Running pip"),
        ),
        (
            SPHINX_FURO,
            "User Guide\n\nRunning pip\n\npip is a command line program.",
            ["¶", "Skip to content", "Back to top", "On this page", "Copyright", "Next"],
            ("User Guide", "Running pip"),
        ),
        (
            MKDOCS_MATERIAL,
            "Command-line reference\n\nEvery flag of every subcommand",
            ["¶", "Skip to content", "Initializing", "Python API", "Table of contents", "Made"],
            ("Command-line reference", "Global options"),
        ),
        (
            RUSTDOC,
            "Module fs\xa0\n\n1.0.0 ·\n\nFilesystem manipulation operations.",
            ["§", "Skip to main content", "Copy item path", "Source", "Expand", "Module Items"],
            ("Module fs", "Time of Check to Time of Use (TOCTOU)"),
        ),
        (
            DOCUSAURUS,
            "How to write great bug reports\n\nWrite great bug reports!\n\nThis page outlines",
            ["Skip", "Academy", "Ask AI", "Go to documentation", "On this page", "Edit this"],
            ("How to write great bug reports", "Thank you"),
        ),
        (
            DOCBOOK,
            # no <main>: what no rule names stays (Publican's "Download the ebook" banner)
            "Download the ebook\n\n1.3. The Internal Workings of the Debian Project\n\nThe",
            ["Prev", "Next", "Up", "Handbook", "1.2. The Foundation"],
            ("1.3. The Internal Workings of the Debian Project",),
        ),
    ],
    ids=[
        "mdbook",
        "sphinx-alabaster",
        "sphinx-furo",
        "mkdocs-material",
        "rustdoc",
        "docusaurus",
        "docbook",
    ],
)
def test_a_generated_page_is_read_as_its_main_content(page, first, chrome, trail):
    doc = read(page)
    assert doc.text.startswith(first), doc.text[:300]
    for words in chrome:
        assert words not in doc.text, (words, doc.text)
    last = doc.text.rindex(doc.text.strip().splitlines()[-1])
    assert doc.headings_at(last) == trail
    # the line map still points at the source: the first words' line holds them
    at = doc.text.index(first.splitlines()[-1][:12])
    assert first.splitlines()[-1][:12] in page.splitlines()[doc.line_at(at) - 1]


def test_the_first_chunk_heading_is_the_page_not_its_help_popup():
    """The issue's case: mdBook's first heading was "Keyboard shortcuts"."""
    doc = read(MDBOOK)
    assert doc.headings_at(0) == ("Installation",)


def test_a_page_without_main_drops_nav_aside_and_footer_but_keeps_a_header_with_the_title():
    page = """<html><body>
<header><h1>Exploring Tide Pools</h1><p>A field guide</p></header>
<header class="site"><a href="/">Home</a> <a href="/blog">Blog</a></header>
<nav><a href="#zones">Zones</a></nav>
<aside>Sponsored: wetsuits</aside>
<p>Twice a day the sea draws back.</p>
<footer>© the authors</footer>
</body></html>"""
    doc = read(page)
    assert doc.text == "Exploring Tide Pools\n\nA field guide\n\nTwice a day the sea draws back.\n"


def test_a_listing_of_many_articles_keeps_them_all():
    """No one article holds half the text: the scope (here <main>) is read whole."""
    posts = "".join(f"<article><h2>Post {i}</h2><p>{'word ' * 30}</p></article>" for i in range(4))
    doc = read(f"<html><body><nav>Menu</nav><main>{posts}</main></body></html>")
    assert [f"Post {i}" in doc.text for i in range(4)] == [True] * 4 and "Menu" not in doc.text


def test_a_main_with_almost_none_of_the_text_is_not_trusted():
    page = (
        "<html><body><main><p>Hi</p></main><div>"
        + "<p>Real content here.</p>" * 20
        + "</div></body></html>"
    )
    assert layout(page).root is None
    assert read(page).text.count("Real content here.") == 20


def test_an_element_left_open_inside_the_root_does_not_leak_what_follows():
    page = "<html><body><main><div><p>Body text</main><footer>Site footer</footer></body></html>"
    assert read(page).text == "Body text\n"


@pytest.mark.parametrize(
    "name, template",
    [
        (
            "overrides/partials/nav.html",
            """{#-
  This file was automatically generated - do not edit
-#}
{% import "partials/nav-item.html" as item with context %}
{% set class = "md-nav md-nav--primary" %}
<nav class="{{ class }}" aria-label="{{ lang.t('nav') }}" data-md-level="0">
  <label class="md-nav__title" for="__drawer">
    {{ config.site_name }}
  </label>
  <ul class="md-nav__list" data-md-scrollfix>
    {% for nav_item in nav.items %}
      {% set path = "__nav_" ~ loop.index %}
      {{ item.render(nav_item, path, 1) }}
    {% endfor %}
  </ul>
</nav>
""",
        ),
        (
            "_templates/layout.html",
            """{% extends "!layout.html" %}
{% block footer %}{{ super() }}
<p class="edit">Edit on <a href="{{ repo }}/{{ pagename }}">GitHub</a></p>
{% endblock %}
""",
        ),
        (
            "app/views/index.html",
            """<% if user %><p><%= user.name %></p><% else %><a href="<%= login_path %>">x</a>
<% end %>""",
        ),
    ],
)
def test_a_template_is_not_a_document_with_its_reason(name, template):
    """Not a document (ignored while walking, a skip when named: tests/test_template_ignored.py),
    with its reason and its kind among the ignored files."""
    with pytest.raises(NotADocument, match="^a template, not a document \\(") as caught:
        parse_html(template, name)
    assert caught.value.kind == TEMPLATE == "HTML template"


def test_a_page_that_shows_template_syntax_in_an_example_is_a_document():
    page = (
        "<html><body><main><h1>Jinja loops</h1><p>"
        + "A loop repeats its body once for each item of a sequence. " * 5
        + "</p><pre>{% for user in users %}{{ user.name }}{% endfor %}</pre></main></body></html>"
    )
    assert template_reason(page) is None
    assert "{% for user in users %}" in read(page).text


def test_a_page_that_is_all_navigation_is_read_whole_rather_than_skipped():
    """A site map or a generated index page is nothing but links in a <nav>: with the rules
    it would be empty (a skipped file, exit 3); it is read as before them."""
    page = '<html><body><nav><a href="a.html">Alpha guide</a> <a href="b.html">Beta</a></nav>'
    assert read(page + "</body></html>").text == "Alpha guide Beta\n"


def test_template_spans_are_outermost_and_an_unclosed_opener_ends_its_kind():
    from ragsift.sources.html import template_spans

    text = "a {{ b }} c {% if x %}{{ y }}{% endif %} <% z %> {{ never closed {# n #}"
    spans = [text[a:b] for a, b in template_spans(text)]
    assert spans == ["{{ b }}", "{% if x %}", "{{ y }}", "{% endif %}", "<% z %>", "{# n #}"]
