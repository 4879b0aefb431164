import matplotlib
import matplotlib.path
import matplotlib.text

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from nlpbook import plot  # noqa: E402
from nlpbook.plot import attention_heads, attention_heatmap, plain_log_ticks, plot_curves  # noqa: E402


def test_heatmap_draws_the_matrix_with_its_labels():
    weights = torch.softmax(torch.randn(3, 4), dim=-1)
    ax = attention_heatmap(weights, ["a", "b", "c"], ["w", "x", "y", "z"], annotate=True, title="t")
    image = ax.get_images()[0].get_array()
    assert image.shape == (3, 4) and torch.allclose(torch.as_tensor(image.data), weights)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["w", "x", "y", "z"]
    assert len(ax.texts) == 12
    plt.close("all")


def test_heatmap_colours_run_from_zero_to_the_largest_value():
    # Zero is the palest colour whatever the matrix (a weight of 0.2 must not look like none), and a
    # matrix of zeros still draws (a colour scale from 0 to 0 has no width).
    counts = torch.tensor([[2.0, 3.0], [4.0, 5.0]])
    assert attention_heatmap(counts).get_images()[0].get_clim() == (0.0, 5.0)
    low, high = attention_heatmap(torch.zeros(2, 2)).get_images()[0].get_clim()
    assert low == 0.0 and 0.0 < high < 1e-6
    plt.close("all")


def test_heatmap_rejects_wrong_labels_and_shapes():
    with pytest.raises(ValueError, match="2 labels for an axis of length 4"):
        attention_heatmap(torch.zeros(3, 4), None, ["a", "b"])
    with pytest.raises(ValueError, match="expected a 2-D matrix"):
        attention_heatmap(torch.zeros(2, 3, 4))
    plt.close("all")


def test_heads_grid_has_one_panel_per_head():
    fig = attention_heads(torch.rand(5, 3, 3), ncols=2)
    assert sum(ax.get_visible() and bool(ax.get_images()) for ax in fig.axes) == 5
    with pytest.raises(ValueError, match="expected \\(heads, queries, keys\\)"):
        attention_heads(torch.rand(3, 3))
    plt.close("all")


def test_curves_are_labelled():
    ax = plot_curves({"train": ([1, 2], [3.0, 2.0]), "valid": ([1, 2], [3.5, 2.5])}, logy=True)
    assert [line.get_label() for line in ax.get_lines()] == ["train", "valid"]
    assert ax.get_yscale() == "log"
    plt.close("all")


def test_project_2d_keeps_the_two_main_directions():
    generator = torch.Generator().manual_seed(0)
    # Points spread along x (std 10) and y (std 3), barely along the 3 other axes.
    points = torch.randn(200, 5, generator=generator) * torch.tensor([10.0, 3.0, 0.01, 0.01, 0.01])
    projected = plot.project_2d(points)
    assert projected.shape == (200, 2)
    # The first component follows x, the second y (up to sign), and they are uncorrelated.
    assert abs(torch.corrcoef(torch.stack([projected[:, 0], points[:, 0]]))[0, 1]) > 0.99
    assert abs(torch.corrcoef(torch.stack([projected[:, 1], points[:, 1]]))[0, 1]) > 0.99
    assert abs(torch.corrcoef(projected.T)[0, 1]) < 1e-4


def placed_labels(ax):
    """The word labels of a map, once its figure is drawn: (PlacedLabels artist, label boxes)."""
    fig = ax.figure
    fig.canvas.draw()
    (placed,) = [a for a in ax.artists if isinstance(a, plot.PlacedLabels)]
    renderer = fig.canvas.get_renderer()
    return placed, [matplotlib.text.Text.get_window_extent(t, renderer) for t in placed.texts]


def assert_apart_and_inside(ax, texts, boxes):
    clashes = [(a.get_text(), b.get_text()) for i, (a, box) in enumerate(zip(texts, boxes))
               for b, other in zip(texts[i + 1:], boxes[i + 1:]) if box.overlaps(other)]
    assert not clashes
    frame = ax.get_window_extent(ax.figure.canvas.get_renderer())
    assert all(frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
               for box in boxes)


def test_word_map_labels_every_word_and_draws_arrows():
    vectors = torch.randn(4, 6, generator=torch.Generator().manual_seed(1))
    ax = plot.word_map(vectors, ["man", "king", "woman", "queen"], arrows=[("man", "king"), ("woman", "queen")])
    placed, _ = placed_labels(ax)
    assert sorted(t.get_text() for t in placed.texts) == ["king", "man", "queen", "woman"]
    # the analogy arrows are the axes' annotations, without text
    assert [bool(t.arrow_patch) and not t.get_text() for t in ax.texts] == [True, True]
    with pytest.raises(ValueError, match="3 words for 4 vectors"):
        plot.word_map(vectors, ["a", "b", "c"])
    plt.close("all")


def tight_clusters(seed):
    # Four tight clusters of four words, as a map of topics has: written at one offset from each
    # point, the words of a cluster print over one another.
    generator = torch.Generator().manual_seed(seed)
    centres = torch.randn(4, 20, generator=generator)
    vectors = torch.cat([centre + 0.05 * torch.randn(4, 20, generator=generator) for centre in centres])
    return vectors, [f"word-{i:02d}" for i in range(16)]


@pytest.mark.parametrize("seed", range(6))
def test_word_map_keeps_the_labels_of_nearly_equal_vectors_apart(seed):
    vectors, words = tight_clusters(seed)
    fig, ax = plt.subplots(figsize=(6, 5))
    ax.scatter(*plot.project_2d(vectors).T, s=12)
    plot.label_points(ax, plot.project_2d(vectors).tolist(), words)
    placed, boxes = placed_labels(ax)
    assert placed.crowded == [] and len(placed.texts) == 16  # none crowded out
    assert_apart_and_inside(ax, placed.texts, boxes)
    plt.close(fig)


@pytest.mark.parametrize("seed", range(3))
def test_word_map_places_its_labels_for_the_layout_made_after_it(seed):
    # A map drawn on a full-size axes that a later title, suptitle or tight_layout shrinks (as
    # glove's three panels are): labels placed for the first size would overlap and cross the
    # edges of the smaller one; placed when drawn, they fit the axes as shown.
    vectors, words = tight_clusters(seed)
    fig, ax = plt.subplots(figsize=(6, 5))
    plot.word_map(vectors, words, ax=ax)
    fig.canvas.draw()  # placed once for the first size
    ax.set_position([0.2, 0.15, 0.7, 0.7])
    placed, boxes = placed_labels(ax)
    assert placed.crowded == [] and len(placed.texts) == 16
    assert_apart_and_inside(ax, placed.texts, boxes)
    plt.close(fig)


def test_word_map_places_once_per_layout_and_again_when_the_limits_change(monkeypatch, tmp_path):
    # A save with a tight bounding box asks where the labels go and then draws them, for the same
    # size and limits: one placement serves both.  New limits move every point, so they place again.
    vectors, words = tight_clusters(0)
    fig, ax = plt.subplots(figsize=(6, 5))
    plot.word_map(vectors, words, ax=ax)
    (placed,) = [a for a in ax.artists if isinstance(a, plot.PlacedLabels)]
    calls = []
    choose = plot.PlacedLabels._choose_places
    monkeypatch.setattr(plot.PlacedLabels, "_choose_places",
                        lambda self, *args: calls.append(1) or choose(self, *args))
    fig.savefig(tmp_path / "map.png", bbox_inches="tight")
    assert len(calls) == 1
    low, high = ax.get_xlim()
    ax.set_xlim(low - (high - low), high)
    _, boxes = placed_labels(ax)
    assert len(calls) == 2 and placed.crowded == []
    assert_apart_and_inside(ax, placed.texts, boxes)
    placed_labels(ax)  # drawn again, nothing changed
    assert len(calls) == 2
    plt.close(fig)


@pytest.mark.parametrize("seed", range(4))
def test_word_map_writes_no_word_across_an_analogy_arrow(seed):
    # Four analogy pairs, as glove's and word2vec's maps draw them: a word written at its first
    # place may sit on the arrow that leaves its point.
    generator = torch.Generator().manual_seed(seed)
    vectors = torch.randn(8, 20, generator=generator)
    words = ["man", "king", "woman", "queen", "paris", "france", "rome", "italy"]
    pairs = [("man", "king"), ("woman", "queen"), ("paris", "france"), ("rome", "italy")]
    fig, ax = plt.subplots(figsize=(6, 5))
    plot.word_map(vectors, words, arrows=pairs, ax=ax)
    placed, boxes = placed_labels(ax)
    arrows = [t for t in ax.texts if not t.get_text()]
    assert len(arrows) == len(pairs) and len(boxes) == len(words)
    paths = [matplotlib.path.Path(ax.transData.transform([t.xyann, t.xy])) for t in arrows]
    assert not [box for box in boxes for path in paths if path.intersects_bbox(box, filled=False)]
    plt.close(fig)


def test_label_points_names_the_labels_it_found_no_room_for():
    # Thirty long words on one point of a small axes: most cannot be placed without a clash.
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.scatter([0.0], [0.0])
    plot.label_points(ax, [(0.0, 0.0)] * 30, [f"a-long-label-{i}" for i in range(30)])
    placed, _ = placed_labels(ax)
    assert 0 < len(placed.crowded) < 30 and placed.crowded[0] != "a-long-label-0"
    assert len(placed.texts) == 30  # each is written all the same
    with pytest.raises(ValueError, match="2 labels for 3 points"):
        plot.label_points(ax, [(0.0, 0.0)] * 3, ["a", "b"])
    plt.close(fig)


def test_a_tight_bounding_box_makes_room_for_labels_that_stick_out():
    # Crowded labels are written at their first place, which may lie outside the axes; a notebook's
    # figure is saved with bbox_inches="tight", which would crop whatever the box leaves out.
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.scatter([0.0, 1.0], [0.0, 1.0])
    plot.label_points(ax, [(1.0, 1.0)] * 12, [f"a-long-label-{i}" for i in range(12)])
    placed, boxes = placed_labels(ax)
    frame = ax.get_window_extent(fig.canvas.get_renderer())
    assert any(box.x1 > frame.x1 or box.y1 > frame.y1 for box in boxes)  # some stick out
    tight = fig.get_tightbbox(fig.canvas.get_renderer()).transformed(fig.dpi_scale_trans)  # pixels
    assert all(tight.x0 <= box.x0 and box.x1 <= tight.x1 and tight.y0 <= box.y0 and box.y1 <= tight.y1
               for box in boxes)
    plt.close(fig)


def test_plain_log_ticks_label_log_axes_with_plain_numbers():
    fig, ax = plt.subplots()
    ax.plot([16, 64, 512], [2.0, 7.0, 60.0])
    ax.set(xscale="log", yscale="log")
    plain_log_ticks(ax, [16, 64, 512])
    fig.canvas.draw()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["16", "64", "512"]
    shown = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert shown and all("10^" not in t and "times" not in t for t in shown)
    assert {"2", "5", "10", "20", "50"} <= set(shown)
    plt.close(fig)


def labels_inside(ax, axis):
    """The tick labels of an axis ("x" or "y") that fall inside its limits, once drawn."""
    low, high = sorted(ax.get_xlim() if axis == "x" else ax.get_ylim())
    labels = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    return [t.get_text() for t in labels if t.get_text() and low <= float(t.get_text()) <= high]


@pytest.mark.parametrize("values, expected", [
    # Perplexities from 3 to 6.5: at 1, 2 and 5 times each power of ten only 5 would be labelled
    # (matplotlib's own labels read 3 x 10^0): every whole multiple.
    ([6.5, 4.0, 3.0], ["3", "4", "5", "6"]),
    # Jacobian norms from 0.059 to 0.29: 1, 2 and 5 times would give 0.1 and 0.2 alone.
    ([0.29, 0.2, 0.059], ["0.07", "0.1", "0.15", "0.2", "0.3"]),
    # Perplexities from 3.2 to 10.5 (language-model's equal-time race): 5, 7 and 10 alone would leave
    # the best models' end, near 3, without a label.
    ([10.5, 5.0, 3.2], ["4", "5", "6", "7", "8", "9", "10"]),
])
def test_plain_log_ticks_label_a_narrow_axis_more_closely(values, expected):
    fig, ax = plt.subplots()
    ax.plot([1, 2, 3], values)
    ax.set(yscale="log")
    plain_log_ticks(ax)
    fig.canvas.draw()
    assert labels_inside(ax, "y") == expected
    plt.close(fig)


def test_plain_log_ticks_label_a_log_x_axis_plainly_only_when_asked():
    # Seconds from 3 to 300: 1, 2 and 5 times each power of ten, not 10^1 and 10^2 alone.
    fig, (asked, left) = plt.subplots(1, 2)
    for ax in (asked, left):
        ax.plot([3, 30, 300], [2.0, 1.5, 1.2])
        ax.set(xscale="log")
    plain_log_ticks(asked, plain_x=True)
    plain_log_ticks(left)
    fig.canvas.draw()
    assert labels_inside(asked, "x") == ["5", "10", "20", "50", "100", "200"]
    # left as matplotlib labels it: powers of ten, written as 10^{k} in mathtext
    assert [t.get_text() for t in left.get_xticklabels() if t.get_text()]
    assert all("10^" in t.get_text() for t in left.get_xticklabels() if t.get_text())
    plt.close(fig)


def test_book_style_sets_the_column_width_and_one_colour_map():
    import nlpbook

    with matplotlib.rc_context():
        nlpbook.use_book_style()
        fig = plt.figure()
        assert tuple(fig.get_size_inches()) == (plot.COLUMN_WIDTH, 3.4)
        assert fig.dpi == 100 and plot.COLUMN_WIDTH * fig.dpi <= 768  # the column at 1400 px
        ax = attention_heatmap(torch.rand(2, 2), ax=fig.add_subplot())
        assert ax.get_images()[0].get_cmap().name == plot.BOOK_STYLE["image.cmap"]
    plt.close("all")


def test_helpers_never_draw_wider_than_the_column():
    wide = attention_heatmap(torch.rand(3, 40)).figure
    heads = attention_heads(torch.rand(8, 3, 3), ncols=4)
    for fig in (wide, heads):
        assert fig.get_size_inches()[0] <= plot.COLUMN_WIDTH
    plt.close("all")
