"""The pages a TA opens (report.html, each submission's page.html, similarity.html), laid out by a real
browser: Debian's Chromium, headless, at a window width; what the layout gives is read back as data by
a probe script the page runs, from the DOM Chromium dumps.

Where Chromium is missing, tests that need it skip, except in CI (CI=true), where they fail: CI
installs it (scripts/test.sh).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--hide-scrollbars",
)  # fmt: skip
# What the probe reads of the laid-out page: whether it scrolls sideways; each table's right edge and
# whether a box that scrolls holds it; where each h2 is; how the first table's header cells stay.
PROBE = """<script>
window.addEventListener('load', () => {
  const view = document.documentElement.clientWidth;
  const boxed = t => { for (let e = t.parentElement; e; e = e.parentElement) {
    const o = getComputedStyle(e).overflowX; if (o === 'auto' || o === 'scroll') return e; } return null; };
  const tables = [...document.querySelectorAll('table')].map(t => {
    const box = boxed(t); const edge = (box || t).getBoundingClientRect().right;
    const section = (t.closest('div.box,section,div') || {}).className || '';
    return {right: Math.round(edge), boxed: !!box, section};
  });
  const headings = [...document.querySelectorAll('h2')].map(h => h.textContent);
  const th = document.querySelector('table th');
  const out = {view, page_width: document.documentElement.scrollWidth, tables, headings,
    first_header: th ? getComputedStyle(th).position : null,
    text: document.body.innerText};
  const pre = document.createElement('pre'); pre.id = 'optlab-probe';
  pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
});
</script>"""


def chromium() -> str:
    """Chromium's path; skips the test where there is none (fails it in CI, which installs it)."""
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is missing in CI: scripts/test.sh installs Debian's chromium as root")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    return CHROMIUM


def _run(page: Path, width: int, *what: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="optlab-chromium-") as profile:
        return subprocess.run(
            [chromium(), *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},900", *what,
             page.as_uri()],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip


def layout(page: Path, width: int) -> dict:
    """The page at `page` laid out in a window `width` px wide: what the probe read (see PROBE)."""
    with tempfile.TemporaryDirectory(prefix="optlab-probe-") as folder:
        probed = Path(folder) / page.name
        probed.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), "utf-8")
        done = _run(probed, width, "--dump-dom", "--virtual-time-budget=5000")
    start = done.stdout.find('<pre id="optlab-probe">')
    assert start >= 0, f"Chromium gave no layout for {page.name} at {width} px: {done.stderr[-500:]}"
    text = done.stdout[start + len('<pre id="optlab-probe">') : done.stdout.index("</pre>", start)]
    import html

    return json.loads(html.unescape(text))


def screenshot(page: Path, width: int, out: Path) -> Path:
    """A PNG of the page's first screen at `width` px, for a person to look at."""
    done = _run(page, width, f"--screenshot={out}")
    assert out.is_file() and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", done.stderr[-500:]
    return out


def overflowing(laid_out: dict) -> list[str]:
    """What of a laid-out page reaches past the window: the page itself, or a table outside a box that
    scrolls (a table in such a box scrolls within the page)."""
    view = laid_out["view"]
    found = [f"the page is {laid_out['page_width']} px wide in a {view} px window"]
    found = found if laid_out["page_width"] > view else []
    return found + [
        f"a table in {t['section'] or 'the page'} ends at {t['right']} px (window {view} px)"
        for t in laid_out["tables"]
        if t["right"] > view
    ]
