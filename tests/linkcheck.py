"""A link checker for an exported site (no tests here; test_site_links.py and test_feeds.py use it).

Every href and src in every HTML page must reach a file of the site, and every #fragment an id
on the page it names. External links (http:, https:, mailto:) are only checked for shape; the
site must work offline, so it has no others.
"""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[tuple[str, str]] = []  # (attribute, value)
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name == "id" and value:
                self.ids.add(value)
            if name in ("href", "src") and value is not None:
                self.links.append((f"<{tag} {name}>", value))


@dataclass(frozen=True)
class Broken:
    page: str
    where: str
    link: str
    why: str

    def __str__(self) -> str:
        return f"{self.page}: {self.where} {self.link!r}: {self.why}"


def parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def check_site(root: Path) -> tuple[int, list[Broken]]:
    """(links checked, broken links) over every .html file under `root`."""
    root = root.resolve()
    pages = {p.resolve(): parse(p) for p in sorted(root.rglob("*.html"))}
    broken: list[Broken] = []
    checked = 0
    for path, page in pages.items():
        rel = str(path.relative_to(root))
        for where, link in page.links:
            checked += 1
            parts = urlsplit(link)
            if parts.scheme in ("http", "https", "mailto"):
                if parts.scheme != "mailto" and not parts.netloc:
                    broken.append(Broken(rel, where, link, "an absolute URL without a host"))
                continue
            if parts.scheme or parts.netloc:
                broken.append(
                    Broken(rel, where, link, f"scheme {parts.scheme!r} has no place here")
                )
                continue
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if parts.path.endswith("/"):
                target = target / "index.html"
            if not target.is_file():
                broken.append(Broken(rel, where, link, "no such file"))
                continue
            if root not in target.parents:
                broken.append(Broken(rel, where, link, "leaves the site"))
                continue
            if parts.fragment:
                ids = pages[target].ids if target in pages else parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(Broken(rel, where, link, "no element has that id"))
    return checked, broken
