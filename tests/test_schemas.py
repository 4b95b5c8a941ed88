"""The shipped JSON Schemas against real outputs: every manifest in fixtures/, a manifest
``profile`` writes now, and the report JSON ``nsightwrap report RUN --format json`` writes for
several shipped runs. A renamed or retyped field fails; an added one passes."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from fake_tools.harness import TARGET, profile, use_fakes

from nsightwrap.cli import main
from nsightwrap.schemas import NAMES, load

ROOT = Path(__file__).resolve().parent.parent
MANIFESTS = sorted((ROOT / "fixtures").rglob("manifest.json"))
REPORT_RUNS = ["h200-example", "h200-blog", "h200-shards", "h200-clock-sweep", "h200-nvtx"]


def validator(name: str) -> jsonschema.Draft202012Validator:
    schema = load(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def errors(name: str, doc: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator(name).iter_errors(doc)]


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    d = tmp_path_factory.mktemp("reports")
    for run in REPORT_RUNS:
        path = d / f"{run}.json"
        with pytest.raises(SystemExit) as exc:
            main(["report", str(ROOT / "fixtures" / "runs" / run), "--format", "json", "-o", str(path)])
        assert exc.value.code in (0, None)
        out[run] = json.loads(path.read_text())
    return out


def test_schemas_ship_as_package_data() -> None:
    from importlib import resources

    names = {p.name for p in resources.files("nsightwrap.schemas").iterdir()}
    assert {f"{n}.schema.json" for n in NAMES} <= names
    pyproject = (ROOT / "pyproject.toml").read_text()  # as text: tomllib is Python 3.11+
    assert '[tool.setuptools.package-data]' in pyproject and '"nsightwrap.schemas" = ["*.schema.json"]' in pyproject
    assert '"jsonschema>=' in pyproject.split("\ndev = [", 1)[1].split("\n]", 1)[0].split("]\n", 1)[0]
    doc = (ROOT / "docs" / "report-json.md").read_text()
    assert "nsightwrap/schemas/report.schema.json" in doc and "nsightwrap/schemas/manifest.schema.json" in doc


@pytest.mark.parametrize("path", MANIFESTS, ids=[str(p.relative_to(ROOT / "fixtures")) for p in MANIFESTS])
def test_every_shipped_manifest_is_valid(path: Path) -> None:
    assert errors("manifest", json.loads(path.read_text())) == []


def test_a_manifest_profile_writes_now_is_valid(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    r = profile(capsys, "-o", "run", "--passes", "plain,nsys", "--no-analyze", "--no-checks", str(TARGET))
    assert r.code == 0, r.err
    doc = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert "plan" in doc  # written now, absent from older shipped runs: optional in the schema
    assert errors("manifest", doc) == []


@pytest.mark.parametrize("run", REPORT_RUNS)
def test_report_json_of_shipped_runs_is_valid(reports: dict[str, dict[str, Any]], run: str) -> None:
    assert reports[run]["detail"] is False
    assert errors("report", reports[run]) == []


def test_detail_report_json_is_valid_and_needs_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "detail.json"
    with pytest.raises(SystemExit) as exc:
        main(["report", str(ROOT / "fixtures" / "runs" / "h200-example"), "--format", "json", "--detail", "-o", str(path)])
    assert exc.value.code in (0, None)
    doc = json.loads(path.read_text())
    assert doc["detail"] is True and errors("report", doc) == []
    # With detail true the rows are required, as in version 2; without, they may be left out.
    bench = next(b for b in doc["benchmarks"] if b["ncu"] is not None)
    del bench["ncu"]["kernels"]
    assert any(e.startswith(f"benchmarks/{doc['benchmarks'].index(bench)}/ncu:") for e in errors("report", doc))
    assert errors("report", {**doc, "detail": False}) == []


def _renamed(doc: dict[str, Any], path: list[str | int], new: str) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    node: Any = doc
    for p in path[:-1]:
        node = node[p]
    node[new] = node.pop(path[-1])
    return doc


@pytest.mark.parametrize(
    "path",
    [["benchmarks"], ["benchmarks", 0, "verdict"], ["benchmarks", 0, "timer", "median_ns"],
     ["benchmarks", 0, "ncu", "normalized_ns"], ["benchmarks", 0, "gap", "residual_ns"], ["settings", "tolerance"],
     ["environment", "gpu_name"]],
    ids=lambda p: "/".join(map(str, p)),
)  # fmt: skip
def test_a_renamed_report_field_fails(reports: dict[str, dict[str, Any]], path: list[str | int]) -> None:
    doc = reports["h200-example"]
    bad = _renamed(doc, path, f"{path[-1]}_renamed")
    assert errors("report", bad), path


def test_a_retyped_report_field_fails_and_an_added_one_passes(reports: dict[str, dict[str, Any]]) -> None:
    doc = copy.deepcopy(reports["h200-example"])
    doc["benchmarks"][0]["verdict"] = "fine"
    doc["benchmarks"][1]["timer"]["n"] = "46"
    doc["format"] = "something-else"
    found = errors("report", doc)
    assert len(found) == 3 and any(f.startswith("benchmarks/0/verdict") for f in found), found
    more = copy.deepcopy(reports["h200-example"])
    more["a_new_field"] = {"x": 1}
    more["benchmarks"][0]["a_new_field"] = [1, 2]
    more["benchmarks"][0]["timer"]["a_new_stat_ns"] = 3.0
    assert errors("report", more) == []


def test_a_renamed_manifest_field_fails(tmp_path: Path) -> None:
    doc = json.loads((ROOT / "fixtures" / "runs" / "h200-example" / "manifest.json").read_text())
    for key in ("passes", "status", "target"):
        assert errors("manifest", _renamed(doc, [key], key + "_renamed")), key
    merged = json.loads((ROOT / "fixtures" / "runs" / "h200-shards" / "manifest.json").read_text())
    assert errors("manifest", _renamed(merged, ["shards"], "parts"))
    merged["added_later"] = True
    assert errors("manifest", merged) == []


def test_the_products_own_checker_agrees_with_jsonschema(reports: dict[str, dict[str, Any]]) -> None:
    """``schemas.problem`` (what the readers use; jsonschema is only a dev dependency) passes every
    shipped manifest and report JSON and names the first field a changed one breaks."""
    from nsightwrap.schemas import problem

    for path in MANIFESTS:
        assert problem(json.loads(path.read_text()), "manifest", required=True) is None, path
    for run, doc in reports.items():
        assert problem(doc, "report", required=True) is None, run
    doc = reports["h200-example"]
    assert problem(_renamed(doc, ["benchmarks", 0, "verdict"], "v"), "report", required=True) == (
        "field 'benchmarks/0/verdict' is missing"
    )
    retyped = copy.deepcopy(doc)
    retyped["benchmarks"][1]["timer"]["n"] = "46"
    assert errors("report", retyped)
    assert problem(retyped, "report") == "field 'benchmarks/1/timer/n' must be an integer or null, not a string"
    manifest = json.loads((ROOT / "fixtures" / "runs" / "h200-example" / "manifest.json").read_text())
    manifest["tools"] = ["ncu"]
    assert errors("manifest", manifest)
    assert problem(manifest, "manifest") == "field 'tools' must be an object, not a list"
    merged = json.loads((ROOT / "fixtures" / "runs" / "h200-shards" / "manifest.json").read_text())
    merged["shards"][0]["dir"] = 3
    assert problem(merged, "manifest") == "field 'shards/0/dir' must be a string, not an integer"
