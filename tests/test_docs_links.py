"""The Markdown files of the repository link only inside it, and every link resolves.

Checked in every ``*.md`` (README, docs/, benchmarks/, notebooks/, CHANGELOG, ...):
inline links and images ``[text](target)`` and reference definitions ``[id]: target``,
outside fenced code blocks and inline code. A target is a path relative to the file (an
optional ``#anchor`` must name a heading of the target Markdown file); web addresses,
absolute paths and paths that leave the repository (``../shared``) fail.
"""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
_SKIP_DIRS = {".venv", ".git", "build", "dist", "node_modules", ".pytest_cache", ".hypothesis"}

_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(?:.+?)\1")
_INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")


def _markdown_files():
    return sorted(
        p
        for p in ROOT.rglob("*.md")
        if not _SKIP_DIRS & set(p.relative_to(ROOT).parts)
        and not any(part.endswith(".egg-info") for part in p.parts)
    )


def _prose_lines(text):
    """The lines outside fenced code blocks, with inline code spans blanked."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, _CODE_SPAN.sub("", line)


def _links(path):
    for number, line in _prose_lines(path.read_text(encoding="utf-8")):
        for m in _INLINE.finditer(line):
            yield number, m.group(1)
        m = _REFERENCE.match(line)
        if m:
            yield number, m.group(1)


def _slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading)
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def _anchors(path):
    return {
        _slug(m.group(1))
        for _, line in _prose_lines(path.read_text(encoding="utf-8"))
        if (m := _HEADING.match(line))
    }


def _problem(md, target):
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
        return "a link outside the repository (docs link only inside it)"
    file_part, _, anchor = target.partition("#")
    if file_part.startswith("/"):
        return "an absolute path"
    dest = (md.parent / file_part).resolve() if file_part else md
    if dest != ROOT and ROOT not in dest.parents:
        return "a path outside the repository"
    if not dest.exists():
        return "no such file"
    if anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
        return f"no heading #{anchor} in {dest.relative_to(ROOT)}"
    return None


MARKDOWN = _markdown_files()


def test_markdown_files_found():
    names = {p.relative_to(ROOT).as_posix() for p in MARKDOWN}
    assert {"README.md", "docs/numpy.md"} <= names, names


@pytest.mark.parametrize("md", MARKDOWN, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_links_resolve_inside_the_repository(md):
    bad = [
        f"{md.relative_to(ROOT)}:{n}: {target}: {problem}"
        for n, target in _links(md)
        if (problem := _problem(md, target))
    ]
    assert not bad, "\n".join(bad)


_RELATIVE_PATH = re.compile(r"(?<![\w./])((?:\.\./)+[\w.-][\w./-]*)")


@pytest.mark.parametrize("md", MARKDOWN, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_mention_of_paths_outside_the_repository(md):
    """Not even in code spans: ``../shared/...`` means nothing in a fresh clone."""
    bad = _outside_mentions(md.read_text(encoding="utf-8"), md.parent)
    assert not bad, f"{md.relative_to(ROOT)}: paths outside the repository: {bad}"


def _outside_mentions(text, base):
    """(line, path) of each ``../`` path in ``text`` that names no file of the repository,
    read from directory ``base`` or from the repository's root."""

    def inside(dest):
        return (dest == ROOT or ROOT in dest.parents) and dest.exists()

    bad = []
    for n, line in enumerate(text.splitlines(), 1):
        for m in _RELATIVE_PATH.finditer(line):
            path = m.group(1).rstrip(".")
            if not (inside((base / path).resolve()) or inside((ROOT / path).resolve())):
                bad.append((n, path))
    return bad


def test_the_checker_catches_bad_links(tmp_path):
    assert _problem(ROOT / "README.md", "docs/numpy.md") is None
    assert _problem(ROOT / "docs" / "kernels.md", "../benchmarks/README.md") is None
    assert "outside" in _problem(ROOT / "README.md", "../shared/STYLE.md")
    assert "outside" in _problem(ROOT / "README.md", "https://numpy.org")
    assert _problem(ROOT / "README.md", "docs/nope.md") == "no such file"
    assert "no heading" in _problem(ROOT / "README.md", "docs/numpy.md#no-such-heading")
    md = tmp_path / "x.md"
    md.write_text(
        "# A title\n`[code](nowhere)`\n```\n[fenced](nowhere)\n```\n"
        "[web](https://example.org) and ![img](pic.png)\n[ref]: ../../etc\n"
    )
    assert [t for _, t in _links(md)] == ["https://example.org", "pic.png", "../../etc"]
    assert _anchors(md) == {"a-title"}
    text = "see `../shared/STYLE.md` and [k](../benchmarks/README.md), a/../b"
    assert _outside_mentions(text, ROOT / "docs") == [(1, "../shared/STYLE.md")]
