"""JUnit XML for CI test reports (lxml): ``nsightwrap compare --format junit``.

One testcase per benchmark: SLOWER is a failure, AMBIGUOUS is skipped with its reason, SAME and
FASTER pass. Benchmarks found on one side only are skipped testcases saying so. Energy per call
has its own words (``energy_verdict``: MORE, LESS, SAME, AMBIGUOUS).
"""

from __future__ import annotations

from lxml import etree

from nsightwrap.compare.verdicts import Comparison, Verdict
from nsightwrap.export.compare_text import fmt_change, fmt_geomean, reconcile_pair, summary
from nsightwrap.export.escape import xml_safe as _x
from nsightwrap.export.registry import exporter

SUITE = "nsightwrap.compare.verdicts"


@exporter("compare", "junit")
def compare_junit(c: Comparison) -> bytes:
    """The comparison as a JUnit XML document (UTF-8 bytes)."""
    counts = c.counts()
    one_sided = len(c.added) + len(c.removed)
    root = etree.Element("testsuites", name="nsightwrap compare")
    suite = etree.SubElement(
        root,
        "testsuite",
        name=SUITE,
        tests=str(len(c.verdicts) + one_sided),
        failures=str(counts[Verdict.SLOWER]),
        errors="0",
        skipped=str(counts[Verdict.AMBIGUOUS] + one_sided),
        time="0",
    )
    props = etree.SubElement(suite, "properties")
    for name, value in (
        ("baseline", _x(c.baseline)),
        ("current", _x(c.current)),
        ("metric", c.metric),
        ("threshold", f"{c.settings.threshold:g}"),
        ("geomean_ratio", fmt_geomean(c.geomean_ratio)),
        ("summary", _x(summary(c))),
    ):
        etree.SubElement(props, "property", name=name, value=value)
    energy = energy_properties(c)
    for v in c.verdicts:
        case = etree.SubElement(suite, "testcase", classname=SUITE, name=_x(v.key), time="0")
        cprops = etree.SubElement(case, "properties")
        for name, value in (
            ("verdict", v.verdict.value),
            ("reason", v.reason.value),
            ("change", fmt_change(v.ratio)),
            ("cycles_change", fmt_change(v.cycles_ratio)),
            *([("clock_cause", v.clock_cause.cause.value)] if v.clock_cause else []),
            *energy.get(v.key, []),
            *_reconcile(c, v.key),
        ):
            etree.SubElement(cprops, "property", name=name, value=_x(value))
        if v.verdict is Verdict.SLOWER:
            fail = etree.SubElement(case, "failure", message=_x(v.message), type=v.reason.value)
            fail.text = _x(f"{v.key}: {v.message}")
        elif v.verdict is Verdict.AMBIGUOUS:
            etree.SubElement(case, "skipped", message=_x(f"{v.reason.value}: {v.message}"))
        else:
            etree.SubElement(case, "system-out").text = _x(f"{v.verdict.value} ({v.reason.value}): {v.message}")
    for key, msg in [(k, "added: not in the baseline") for k in c.added] + [
        (k, "removed: not in the current run") for k in c.removed
    ]:
        case = etree.SubElement(suite, "testcase", classname=SUITE, name=_x(key), time="0")
        etree.SubElement(case, "skipped", message=msg)
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)


def _reconcile(c: Comparison, key: str) -> list[tuple[str, str]]:
    """Each side's reconcile verdict (the report's words), where the inputs carry one."""
    if key not in c.reconcile:
        return []
    base, cur = reconcile_pair(c, key)
    return [("baseline_reconcile", base), ("current_reconcile", cur)]


def energy_properties(c: Comparison) -> dict[str, list[tuple[str, str]]]:
    """Per benchmark key, the JUnit properties of its energy verdict."""
    return {v.key: [("energy_verdict", v.verdict.value), ("energy_reason", v.reason.value),
                    ("energy_change", fmt_change(v.ratio))] for v in c.energy}  # fmt: skip
