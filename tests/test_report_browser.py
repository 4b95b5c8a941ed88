"""The HTML report of the shipped H200 run, opened in a real headless Chromium.

The page a user opens must render: every chart drawn (inline SVG, painted in the screenshot),
nothing fetched from the network, and no error on the browser's console. Chromium is driven
through chromedriver (selenium); the full-page screenshot comes from the DevTools protocol.

Where Chromium, chromedriver or selenium is missing the test is skipped and says what to
install; with ``NSIGHTWRAP_REQUIRE_BROWSER=1`` (set by ``.ci/run``) it fails instead, so CI
cannot pass without having looked at the page.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "fixtures" / "runs" / "h200-example"
REQUIRE = os.environ.get("NSIGHTWRAP_REQUIRE_BROWSER") == "1"
WIDTH = 1400
#: The timer's bar colour in every chart (export/html.py); painted pixels of it prove the SVG drew.
TIMER_RGB = (0x4C, 0x72, 0xB0)


def _need_browser() -> tuple[str, str]:
    """Chromium's and chromedriver's paths, or skip (fail under NSIGHTWRAP_REQUIRE_BROWSER=1)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    driver = shutil.which("chromedriver")
    missing = [name for name, path in (("chromium", chromium), ("chromedriver", driver)) if path is None]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("selenium (pip install -e '.[dev]')")
    if missing:
        why = (
            f"{', '.join(missing)} not found: on Debian/Ubuntu `apt-get install chromium chromium-driver` "
            "(.ci/run installs them)"
        )
        if REQUIRE:
            pytest.fail(f"NSIGHTWRAP_REQUIRE_BROWSER=1 but {why}", pytrace=False)
        pytest.skip(why)
    assert chromium is not None and driver is not None
    return chromium, driver


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    chromium, driver_path = _need_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in (
        "--headless=new",
        "--no-sandbox",  # CI runs as root, where Chromium's sandbox refuses to start
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--window-size={WIDTH},1000",
    ):
        opts.add_argument(arg)
    # Keep every console message (chromedriver's default keeps only some).
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # An explicit chromedriver: selenium never tries to download one.
    drv = webdriver.Chrome(options=opts, service=Service(executable_path=driver_path))
    drv.set_page_load_timeout(60)
    try:
        yield drv
    finally:
        drv.quit()


@pytest.fixture(scope="module")
def report_html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``nsightwrap report fixtures/runs/h200-example -f html`` through the real entry point."""
    out = tmp_path_factory.mktemp("browser") / "report.html"
    r = subprocess.run(
        [sys.executable, "-m", "nsightwrap", "report", str(RUN), "-f", "html", "-o", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return out


def _benchmark_names() -> list[str]:
    """The benchmarks of the shipped run, from its timer sidecar (not from the report)."""
    (sidecar,) = (RUN / "plain").glob("timer-*.json")
    return [b["name"] for b in json.loads(sidecar.read_text())["benchmarks"]]


def test_report_renders_with_charts_and_no_console_errors(browser: Any, report_html: Path) -> None:
    names = _benchmark_names()
    browser.get(report_html.as_uri())
    page = browser.execute_script(
        """
        const box = e => { const r = e.getBoundingClientRect(); return [r.width, r.height]; };
        return {
          ready: document.readyState,
          title: document.title,
          headings: [...document.querySelectorAll('h2')].map(h => h.textContent),
          charts: [...document.querySelectorAll('div.chart > svg')].map(box),
          chart_text: [...document.querySelectorAll('div.chart svg text')].map(t => t.textContent),
          images: [...document.images].map(i => [i.complete, i.naturalWidth]),
          resources: performance.getEntriesByType('resource').map(r => r.name),
          scripts: document.scripts.length,
        };
        """
    )
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert page["ready"] == "complete"
    assert page["title"].startswith("nsightwrap report")
    for h in ("Summary", "Flagged benchmarks", "Timings side by side", "Environment"):
        assert h in page["headings"], page["headings"]
    # One SM-clock chart: the energy section's timeline, else the plain pass's own chart.
    assert page["headings"].count("SM clock, plain pass") <= 1, page["headings"]
    # One bar chart per benchmark and the plain pass's clock trace, each laid out at a real size.
    # (also a waterfall per flagged benchmark, and the roofline and power sections' charts)
    assert len(page["charts"]) >= len(names) + 1, page["charts"]
    assert all(w > 200 and h > 100 for w, h in page["charts"]), page["charts"]
    chart_text = " ".join(page["chart_text"])
    assert all(f"{n}:" in chart_text for n in names), chart_text[:500]  # each chart's title
    assert all(done and width > 0 for done, width in page["images"]), page["images"]  # none broken
    assert page["resources"] == [], "the report must be self-contained"
    assert not errors, errors

    # The console is really being read: a message written now comes back.
    browser.execute_script("console.error('nsightwrap-console-probe')")
    assert any("nsightwrap-console-probe" in e["message"] for e in browser.get_log("browser"))

    # The whole page, not only the window.
    shot = browser.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
    keep = os.environ.get("NSIGHTWRAP_BROWSER_OUT")  # .ci/run keeps the screenshot and a summary
    out_dir = Path(keep) if keep else report_html.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    png = out_dir / "report.png"
    png.write_bytes(base64.b64decode(shot["data"]))
    height, width = _check_screenshot(png)
    summary = (
        f"browser test ran: Chromium {browser.capabilities.get('browserVersion')} rendered {report_html.name} "
        f"of {RUN.relative_to(ROOT)}: {len(page['charts'])} charts, {len(names)} benchmarks, no console errors, "
        f"no network requests; screenshot {png} ({width}x{height} px, {png.stat().st_size} bytes)"
    )
    (out_dir / "summary.txt").write_text(summary + "\n")
    print(summary)


def _check_screenshot(png: Path) -> tuple[int, int]:
    """A real picture of the report: PNG, page-sized, mostly white but far from blank, bars painted;
    its height and width in pixels."""
    import matplotlib.image as mpimg
    import numpy as np

    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000, len(data)
    img = (mpimg.imread(png)[..., :3] * 255).round().astype(np.int16)
    height, width = img.shape[:2]
    assert width >= WIDTH - 40 and height >= 2000, (width, height)  # the full page, not one window
    inked = (img < 240).any(axis=2).mean()
    assert 0.03 < inked < 0.6, inked  # text, tables and charts on a white page
    timer_bars = (np.abs(img - np.array(TIMER_RGB)).max(axis=2) <= 8).sum()
    assert timer_bars > 2_000, timer_bars  # the charts' timer bars are painted, not only laid out
    return height, width


def test_roofline_points_name_their_benchmark_on_hover(browser: Any, report_html: Path) -> None:
    """Each point of the roofline chart holds an SVG <title> (the hover text Chromium shows) that
    starts with its benchmark's name, and the point is painted where the pointer can reach it."""
    names = _benchmark_names()
    browser.get(report_html.as_uri())
    points = browser.execute_script(
        """
        return [...document.querySelectorAll('div.chart svg g.nw-point')].map(g => {
          const r = g.getBoundingClientRect();
          const t = g.querySelector(':scope > title');
          return {title: t ? t.textContent : null, w: r.width, h: r.height, x: r.x + r.width / 2, y: r.y + r.height / 2};
        });
        """
    )
    assert points, "no roofline point with a <title> in the page"
    heads = [p["title"].split("\n")[0] for p in points if p["title"]]
    assert len(heads) == len(points) and all(h in names or h.split(": ")[0] in names for h in heads), heads
    assert {"mm_large", "mm_small"} <= set(heads), heads
    assert all(p["w"] > 0 and p["h"] > 0 for p in points), points
    # The element under the point's centre belongs to that point: hovering it reaches its title.
    p = next(p for p in points if p["title"].startswith("mm_large\n"))
    hit = browser.execute_script(
        """
        const g = [...document.querySelectorAll('div.chart svg g.nw-point')]
          .find(g => g.querySelector(':scope > title').textContent.startsWith('mm_large\\n'));
        g.scrollIntoView({block: 'center'});
        const r = g.getBoundingClientRect();
        const e = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
        return e ? e.closest('g.nw-point') === g : false;
        """
    )
    assert hit, p


def test_clock_chart_has_its_caption_and_each_benchmark_span(browser: Any, tmp_path: Path) -> None:
    """The plain pass's clock chart, as the browser lays it out: a caption under it that says what
    is drawn and where the samples come from, and each benchmark's span shaded and named on it (the
    clock-sweep run's benchmarks carry their spans); the example run, whose benchmarks carry none,
    says so in its caption."""
    sweep = ROOT / "fixtures" / "runs" / "h200-clock-sweep"
    names = [b["name"] for b in json.loads(next((sweep / "plain").glob("timer-*.json")).read_text())["benchmarks"]]
    for run, spans in ((sweep, names), (RUN, [])):
        out = tmp_path / f"{run.name}.html"
        r = subprocess.run([sys.executable, "-m", "nsightwrap", "report", str(run), "-f", "html", "-o", str(out)],
                           capture_output=True, text=True, timeout=120)  # fmt: skip
        assert r.returncode == 0, r.stderr
        browser.get(out.as_uri())
        fig = browser.execute_script(
            """
            const f = document.querySelector('figure.timeline');
            if (!f) return null;
            const svg = f.querySelector('div.chart > svg');
            const r = svg.getBoundingClientRect();
            return {caption: f.querySelector('figcaption').textContent, w: r.width, h: r.height,
                    text: [...svg.querySelectorAll('text')].map(t => t.textContent),
                    captionBelow: f.querySelector('figcaption').getBoundingClientRect().top >= r.bottom - 1};
            """
        )
        assert fig is not None, f"{run.name}: no clock chart with a caption"
        assert fig["w"] > 200 and fig["h"] > 100 and fig["captionBelow"], fig
        assert "nvidia-smi samples" in fig["caption"] and "plain pass" in fig["caption"], fig["caption"]
        if spans:
            assert f"shaded and named ({len(spans)} of {len(spans)} benchmarks" in fig["caption"], fig["caption"]
            assert all(n in fig["text"] for n in spans), fig["text"]
        else:
            assert "No benchmark's time span is known in this run" in fig["caption"], fig["caption"]
