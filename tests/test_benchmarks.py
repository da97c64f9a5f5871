"""The benchmark's pure helpers: the importtime parser, and `prepare` running outside the timing."""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import harness  # noqa: E402
import launch_profile  # noqa: E402

TRACE = """\
import time: self [us] | cumulative | imported package
import time:        10 |         10 |     _c
import time:        20 |         30 |   b
import time:         5 |          5 |   d
import time:       100 |        135 | a
import time:         7 |          7 | e
"""


def test_parse_importtime_rebuilds_the_tree() -> None:
    roots = launch_profile.parse_importtime(TRACE)

    assert [root.name for root in roots] == ["a", "e"]
    a = roots[0]
    assert [child.name for child in a.children] == ["b", "d"]
    assert [child.name for child in a.children[0].children] == ["_c"]
    assert a.children[0].children[0].parent is a.children[0]
    assert (a.self_us, a.cumulative_us, a.depth) == (100, 135, 0)
    assert [node.name for node in launch_profile.walk(roots)] == ["a", "b", "_c", "d", "e"]


def test_prepare_runs_before_every_run_and_only_measured_runs_are_kept(tmp_path: Path) -> None:
    calls: list[int] = []
    series = harness.Series(
        "true", ("true",), {"PATH": "/usr/bin:/bin"}, tmp_path, lambda: calls.append(1)
    )

    harness.measure([series], runs=3, warmups=2)

    assert len(calls) == 5
    assert len(series.samples) == 3
    assert series.measured_from is not None


def _series(label: str, seconds: list[float]) -> harness.Series:
    series = harness.Series(label, ("true",), {}, Path())
    series.samples = [harness.Sample(value, 0, cpu=value) for value in seconds]
    return series


def test_ratios_pair_the_runs_of_each_round() -> None:
    """A machine that runs at half speed for two rounds of five moves the ratio of medians
    (here 2.0 / 1.5 = 1.33); the median of the rounds' ratios stays 1.2."""
    baseline = _series("floor", [1.0, 1.0, 2.0, 2.0, 1.5])
    measured = _series("launch", [1.2, 1.2, 2.4, 2.4, 1.8])
    measured.samples[4] = harness.Sample(2.0, 0, cpu=2.0)  # an outlier in the middle round
    assert measured.median / baseline.median == 2.0 / 1.5
    assert harness.paired_ratio(measured, baseline) == 1.2
    assert harness.paired_ratio(measured, baseline, cpu=True) == 1.2


def test_the_interval_of_a_ratio_widens_with_the_noise_of_its_rounds() -> None:
    baseline = _series("floor", [1.0] * 41)
    steady = _series("steady", [1.2] * 41)
    assert harness.paired_interval(steady, baseline) == (1.2, 1.2)
    # Rounds that scatter from 1.0 to 1.4 around the same median of 1.2.
    noisy = _series("noisy", [1.0 + 0.01 * (i % 41) for i in range(41)])
    low, high = harness.paired_interval(noisy, baseline)
    assert harness.paired_ratio(noisy, baseline) == 1.2
    assert 1.05 < low < 1.2 < high < 1.35
    assert harness.paired_interval(noisy, baseline) == (low, high)  # a fixed seed


def test_a_cold_series_is_a_launch_after_an_edit_and_a_warm_one_hits(tmp_path: Path) -> None:
    # The harness's own check, on real runs: each cold run misses the merged entry only (the
    # built-in layer's entry is written once), and warm runs rewrite nothing.
    import run
    import scenarios

    world = scenarios.create(tmp_path / "world")
    scenarios.small(world)
    task = ("-q", "task", "t", "x")
    cold = run.launch(world, "small", task, state=run.COLD)
    warm = run.launch(world, "small", task, state=run.WARM)
    harness.measure([cold.series, warm.series], runs=2, warmups=1)
    assert (cold.series.failure, warm.series.failure) == (None, None)
    notes = run.Log()
    for item in (cold, warm):
        run.check_cache(item, notes)
    assert notes.lines == []
    names = [path.name for path in scenarios.cache_entries(cold.cache)]
    assert [name.split("-")[0] for name in names] == ["config", "layer"]

    cold.series.prepare = None  # no edit: the runs hit the entry the last one wrote
    cold.series.measured_from = None
    harness.measure([cold.series], runs=2, warmups=0)
    run.check_cache(cold, notes)
    assert notes.lines == [
        f"  note: {cold.series.label}: no run rewrote the config's entry, so they hit it: not cold"
    ]


def test_the_large_config_holds_what_its_rows_name(tmp_path: Path) -> None:
    # Row 2a is "1,000 tasks" and its limit is about config size: the generated config must hold
    # the counts scenarios.LARGE_COUNTS names, and the measured task must be one of them.
    import tomllib

    import scenarios

    world = scenarios.create(tmp_path / "world")
    scenarios.large(world)
    found = {}
    for section in ("agents", "roles", "contexts", "tasks"):
        path = world.config("large") / f"{section}.toml"
        found[section] = tomllib.loads(path.read_text(encoding="utf-8"))[section]
    counts = {section: len(items) for section, items in found.items()}
    required = sum(1 for context in found["contexts"].values() if context.get("required"))
    assert {**counts, "required": required} == scenarios.LARGE_COUNTS
    assert counts["tasks"] == 1000
    assert scenarios.LARGE_TASK in found["tasks"]


def test_the_recording_figures_go_between_the_markers_and_say_which_way_costs_less(
    tmp_path: Path,
) -> None:
    import recording

    made = {}
    for label, wall in (
        ("spool, cold", 0.001),
        ("spool, cold, the 64th", 0.065),
        ("insert, cold", 0.004),
        ("spool, warm", 0.001),
        ("insert, warm", 0.0005),
    ):
        made[label] = recording.Series(label, "", "", tmp_path, wall=[wall], cpu=[wall])
    text, wins = recording.report(made, {"CPU": "x"}, 1, "today")
    assert not wins  # warm, the insert costs half the spool
    assert text.splitlines()[2] == (
        "| cold: a fresh process records one run (a launch, `--print`) | 2.00 ms (CPU 2.00 ms) "
        "| 4.00 ms (CPU 4.00 ms) | 2.0× | 2.0× |"
    )
    assert "should insert instead (exit status 1)" in text
    document = tmp_path / "doc.md"
    document.write_text(f"before\n{recording.BEGIN}\nold\n{recording.END}\nafter\n")
    recording.write(document, "new")
    assert document.read_text() == f"before\n{recording.BEGIN}\n\nnew\n\n{recording.END}\nafter\n"


def test_a_project_series_is_approved_and_its_warm_runs_rewrite_nothing(tmp_path: Path) -> None:
    # Rows 2d to 2f: each project series approves its project in its own state directory, and
    # its warm runs are served by the config cache and the project's memo (start.config.memo):
    # a run that rewrote either would be noted as not warm.
    import run
    import scenarios

    world = scenarios.create(tmp_path / "world")
    scenarios.projects(world)
    items = [
        run.launch(
            world, "project-large", ("-q", "task", scenarios.LARGE_TASK, "x"), state=run.WARM
        ),
        run.launch(world, "project-small", ("-q", "task", "t", "x"), state=run.WARM),
        run.launch(
            world, "project-whole", ("-q", "task", scenarios.LARGE_TASK, "x"), state=run.WARM
        ),
    ]
    harness.measure([item.series for item in items], runs=2, warmups=1)
    notes = run.Log()
    for item in items:
        assert item.series.failure is None
        run.check_cache(item, notes)
        kinds = {path.name.split("-")[0] for path in scenarios.cache_entries(item.cache)}
        assert kinds == {"config", "layer", "memo"}
    assert notes.lines == []


def test_the_large_project_holds_the_tasks_and_contexts_its_row_names(tmp_path: Path) -> None:
    # Row 2d is "1,000 tasks and 200 contexts in a trusted project's .start/": the project layer
    # holds those files and no other, and the user's layer the rest of the large config.
    import scenarios

    world = scenarios.create(tmp_path / "world")
    scenarios.projects(world)
    start = world.project("project-large") / ".start"
    assert sorted(path.name for path in start.iterdir()) == ["contexts.toml", "tasks.toml"]
    user = sorted(path.name for path in world.config("project-large").iterdir())
    assert user == ["agents.toml", "config.toml", "roles.toml"]
    whole = sorted(path.name for path in (world.project("project-whole") / ".start").iterdir())
    assert whole == ["agents.toml", "config.toml", "contexts.toml", "roles.toml", "tasks.toml"]
