"""labs/memory_bandwidth/bandwidth.py and figures.py: the roofline arithmetic against hand computations, the presets
against their datasheet numbers, and the forward timer on a scripted fake model."""

import pytest

from specviz.labs.memory_bandwidth import bandwidth
from specviz.labs.memory_bandwidth import figures as bandwidth_figures
from tests.fakes import FakeLanguageModel

A100 = bandwidth.PRESETS["A100 80GB PCIe"]


def test_a100_crossover_is_near_161():
    crossover = bandwidth.crossover_batch(2, A100["bandwidth_bytes_per_s"], A100["flops_per_s"])
    assert abs(crossover - 161) <= 1
    assert crossover == pytest.approx(312e12 * 2 / (2 * 1935e9))
    # At B* the arithmetic takes exactly as long as reading the weights, for any model size.
    for params in (1e8, 11e9):
        assert bandwidth.compute_seconds(params, crossover, 312e12) == pytest.approx(
            bandwidth.weight_read_seconds(params, 2, 1935e9))


def test_other_presets_crossovers():
    def crossover(name):
        preset = bandwidth.PRESETS[name]
        return bandwidth.crossover_batch(preset["bytes_per_param"], preset["bandwidth_bytes_per_s"], preset["flops_per_s"])
    assert crossover("A100 40GB") == pytest.approx(312e12 / 1555e9)  # ≈ 200.6: less bandwidth, later crossover
    assert crossover("H100 SXM") == pytest.approx(989e12 / 3.35e12)  # ≈ 295


def test_course_11b_example_is_22_ms_per_token():
    course = bandwidth.PRESETS["course: 11B model at 1 TB/s"]
    assert bandwidth.weight_read_seconds(11e9, 2, 1e12) == pytest.approx(0.022)
    assert bandwidth.step_seconds(batch=1, **course) == pytest.approx(0.022)
    assert bandwidth.min_walltime_seconds(100, **course) == pytest.approx(2.2)
    assert bandwidth.min_walltime_seconds(0, **course) == 0.0


def test_step_is_the_roofline_max():
    memory = 11e9 * 2 / 1935e9
    assert bandwidth.step_seconds(11e9, 1, 2, 1935e9, 312e12) == pytest.approx(memory)
    assert bandwidth.step_seconds(11e9, 100, 2, 1935e9, 312e12) == pytest.approx(memory)  # still memory-bound
    assert bandwidth.step_seconds(11e9, 400, 2, 1935e9, 312e12) == pytest.approx(2 * 11e9 * 400 / 312e12)
    assert bandwidth.min_walltime_seconds(10, 11e9, 2, 1935e9, 312e12, batch=400) == pytest.approx(10 * 2 * 11e9 * 400 / 312e12)


def test_a100_40gb_hierarchy_has_the_corrected_figures():
    tiers = {row["tier"]: row for row in bandwidth.hierarchy_read_times()}
    sram, l2, hbm = tiers["on-chip SRAM (L1 / shared)"], tiers["L2 cache"], tiers["HBM2"]
    host = tiers["host DRAM over PCIe 4.0 x16"]
    assert sram["capacity_bytes"] / 2**20 == 20.25  # 192 KiB × 108 SMs
    assert sram["bandwidth_bytes_per_s"] == 19e12  # FlashAttention's estimate
    assert l2["capacity_bytes"] == 41_943_040
    assert hbm["bandwidth_bytes_per_s"] == 1555e9  # the 40GB parts, not the 80GB PCIe's 1,935 GB/s
    assert host["bandwidth_bytes_per_s"] == pytest.approx(31.5e9, rel=1e-3)  # PCIe 4.0 x16, one direction
    speeds = [row["bandwidth_bytes_per_s"] for row in tiers.values()]
    assert speeds == sorted(speeds, reverse=True)  # fastest first, ...
    sizes = [row["capacity_bytes"] for row in tiers.values()]
    assert sizes == sorted(sizes)  # ... and smallest first
    # The course's 22 GB model, read once: only HBM and the host can hold it.
    assert sram["read_seconds"] is None and l2["read_seconds"] is None
    assert hbm["read_seconds"] * 1e3 == pytest.approx(14.1, abs=0.05)  # 22e9 / 1555e9
    assert host["read_seconds"] == pytest.approx(22e9 / 31.5e9, rel=1e-3)
    assert 22e9 / 1935e9 * 1e3 == pytest.approx(11.4, abs=0.05)  # what the course's figure would give
    assert bandwidth.crossover_batch(2, hbm["bandwidth_bytes_per_s"], 312e12) == pytest.approx(200.64, abs=0.01)
    assert bandwidth.hierarchy_read_times(1e6)[0]["read_seconds"] == pytest.approx(1e6 / 19e12)  # 1 MB fits in SRAM


def test_hierarchy_caption_says_which_figure_is_corrected():
    caption = bandwidth.hierarchy_caption()
    for number in ("1,935 GB/s", "1,555 GB/s", "**14.1 ms**", "not 11.4 ms", "22 ms", "**200.6**", "not 161", "31.5 GB/s",
                   "312e12 × 2 / (2 × 1,555e9)", "16 bytes", "2 bytes", "40 MB", "192 KiB × 108 = 20.25 MiB"):
        assert number in caption


def test_the_tab_opens_on_the_card_its_caption_corrects():
    """The headline (the opening preset's weight read) and the caption's corrected figure are one number: 14.1 ms,
    not the blog post's 11.4 ms."""
    from specviz.app.tabs.memory_bandwidth import bandwidth_preset, bandwidth_view

    headline = bandwidth_view(*bandwidth_preset(bandwidth.OPENING_PRESET), 1, 1000)[0]
    read_ms = 11e9 * 2 / bandwidth.PRESETS[bandwidth.OPENING_PRESET]["bandwidth_bytes_per_s"] * 1e3
    assert f"**{read_ms:.2f} ms**" in headline and f"**{read_ms:.1f} ms**" in bandwidth.hierarchy_caption()
    assert "11.37" not in headline


@pytest.mark.parametrize("call", [
    lambda: bandwidth.hierarchy_read_times(0),
    lambda: bandwidth.hierarchy_read_times(1e9, [dict(tier="x", capacity_bytes=1e9, bandwidth_bytes_per_s=-1.0)]),
    lambda: bandwidth.weight_read_seconds(-1, 2, 1e12),
    lambda: bandwidth.weight_read_seconds(11e9, 2, 0),
    lambda: bandwidth.compute_seconds(11e9, 0, 312e12),
    lambda: bandwidth.crossover_batch(2, 1935e9, float("nan")),
    lambda: bandwidth.step_seconds(11e9, 1, "2", 1e12, None),
    lambda: bandwidth.min_walltime_seconds(-5, 11e9, 2, 1e12),
    lambda: bandwidth.bandwidth_bound_until({2: 1.0}),
    lambda: bandwidth.bandwidth_bound_until({1: 1.0}, tolerance=0.9),
])
def test_bad_inputs_raise_value_error(call):
    with pytest.raises(ValueError):
        call()


@pytest.mark.parametrize("timings,expected", [
    ({1: 10, 2: 10.5, 3: 12, 4: 13, 5: 12}, 3),  # the walk stops at 4 (13 > 12.5); the fast 5 does not count
    ({k: 10.0 for k in range(1, 9)}, 8),  # flat all the way
    ({1: 10, 2: 20, 3: 11}, 1),
    ({1: 10, 2: 12.5}, 2),  # exactly at the tolerance still counts
    ({1: 10, 2: 11, 4: 11, 8: 13}, 4),  # the timed sizes in order: k = 3 was not timed, 8 is over the line
    ({1: 10, 4: 13, 2: 11}, 2),  # in order of k, whatever the dict's order
])
def test_bandwidth_bound_until(timings, expected):
    assert bandwidth.bandwidth_bound_until(timings, tolerance=1.25) == expected


def test_measure_forward_ms_times_each_size_on_a_fake_model():
    model = FakeLanguageModel(vocab_size=5, salt=3)
    context = [1, 2, 3, 4]
    sizes = (1, 2, 3, 5, 8, 12)
    timings = bandwidth.measure_forward_ms(model, context, sizes, repeats=2)
    assert list(timings) == list(sizes)
    assert all(ms > 0 for ms in timings.values())
    assert model.cached_length == len(context)  # every timed forward was cropped back off
    bound, limit = bandwidth.bandwidth_bound_until(timings), 1.25 * timings[1]
    assert all(timings[k] <= limit for k in sizes if k <= bound)  # flat up to the bound ...
    assert bound == 12 or timings[sizes[sizes.index(bound) + 1]] > limit  # ... and the next size timed is over the line
    assert bandwidth.MEASURED_SIZES[0] == 1 and max(bandwidth.MEASURED_SIZES) == 32  # the tab's k = 1 to 32
    with pytest.raises(ValueError):
        bandwidth.measure_forward_ms(model, [], (1, 2))  # no context to time after
    for bad_sizes in ((), (2, 3), (1, 3, 2), (1, 1, 2), (1, 2.5)):  # from 1, whole, increasing
        with pytest.raises(ValueError):
            bandwidth.measure_forward_ms(model, context, bad_sizes)
    with pytest.raises(ValueError):
        bandwidth.measure_forward_ms(model, context, (1, 2), repeats=0)


# ---------------------------------------------------------------- figures


def test_roofline_figure_data_match_the_formulas():
    figure = bandwidth_figures.roofline_figure(**A100, max_batch=300, name="A100")
    memory, compute, step = figure.data
    assert list(memory.x) == list(range(1, 301))
    assert list(memory.y) == pytest.approx([11e9 * 2 / 1935e9 * 1e3] * 300)
    assert list(compute.y) == pytest.approx([2 * 11e9 * b / 312e12 * 1e3 for b in range(1, 301)])
    assert list(step.y) == pytest.approx([max(m, c) for m, c in zip(memory.y, compute.y)])
    crossover_lines = [shape for shape in figure.layout.shapes if shape.type == "line"]
    assert [shape.x0 for shape in crossover_lines] == [pytest.approx(312e12 / 1935e9)]
    assert any("B* = 161" in annotation.text for annotation in figure.layout.annotations)


def test_roofline_without_flops_draws_memory_only():
    figure = bandwidth_figures.roofline_figure(**bandwidth.PRESETS["course: 11B model at 1 TB/s"])
    assert len(figure.data) == 1 and list(figure.data[0].y) == pytest.approx([22.0] * 256)
    assert "22.0 ms per token" in figure.layout.title.text


def test_memory_hierarchy_figure_shows_each_tier_and_the_read_times():
    figure = bandwidth_figures.memory_hierarchy_figure()
    capacity, rate, read, corrected = figure.data
    assert list(capacity.y) == [row["tier"] for row in bandwidth.A100_40GB_HIERARCHY]
    assert list(capacity.x) == [row["capacity_bytes"] for row in bandwidth.A100_40GB_HIERARCHY]
    assert list(rate.text) == ["19.0 TB/s", "7.2 TB/s", "1,555 GB/s", "31.5 GB/s"]
    assert list(read.y) == ["HBM2", "host DRAM over PCIe 4.0 x16"] and read.text[0] == "14.1 ms"
    assert list(corrected.x) == pytest.approx([22.0, 22e9 / 1935e9 * 1e3])  # 1 TB/s and 1,935 GB/s
    assert sum(annotation.text == "too small for 22 GB" for annotation in figure.layout.annotations) == 2
    assert all(axis.type == "log" for axis in (figure.layout.xaxis, figure.layout.xaxis2, figure.layout.xaxis3))


def test_the_measured_figure_of_sparse_sizes_ticks_each_size_timed():
    timings = {1: 20.0, 2: 20.1, 4: 21.0, 8: 24.0, 16: 33.0, 32: 60.0}
    figure = bandwidth_figures.measured_forward_figure(timings, tolerance=1.25)
    assert list(figure.layout.xaxis.tickvals) == [1, 2, 4, 8, 16, 32]
    region = next(shape for shape in figure.layout.shapes if shape.type == "rect")
    assert region.x1 == 8.5 and "k = 8" in figure.layout.title.text  # 24 ms ≤ 25 ms; 16 is over


def test_measured_forward_figure_marks_the_flat_region():
    timings = {1: 20.0, 2: 20.2, 3: 20.4, 4: 21.0, 5: 26.0, 6: 31.0}
    figure = bandwidth_figures.measured_forward_figure(timings, tolerance=1.25)
    line = figure.data[0]
    assert list(line.x) == [1, 2, 3, 4, 5, 6] and list(line.y) == [timings[k] for k in range(1, 7)]
    region = next(shape for shape in figure.layout.shapes if shape.type == "rect")
    assert region.x1 == 4.5  # k = 1..4 stay within 1.25 × 20 ms = 25 ms
    assert "k = 4" in figure.layout.title.text
    tolerance_line = next(shape for shape in figure.layout.shapes if shape.type == "line")
    assert tolerance_line.y0 == pytest.approx(25.0)
