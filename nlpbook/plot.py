"""Figures the chapters share: attention heat maps, training curves and word maps."""
from __future__ import annotations

import math
from typing import Sequence

import matplotlib.pyplot as plt
import torch
from matplotlib import artist
from matplotlib.artist import Artist
from matplotlib.path import Path
from matplotlib.text import Annotation, Text
from matplotlib.transforms import Bbox

#: The widest figure the book shows at its natural size, in inches: sphinx-book-theme gives a
#: figure 768 px of its text column at desktop width, and the book's style draws 100 px to the
#: inch. A wider figure is shrunk to the column and its lettering with it (an 11-inch figure's
#: 10-point labels read as 7-point ones), so a row of panels shares this width instead.
COLUMN_WIDTH = 7.5

#: The book's figure style (``nlpbook.use_book_style()`` applies it): one size of lettering,
#: readable in the column, and one colour map for every heat map.
BOOK_STYLE = {
    "figure.dpi": 100,
    "figure.figsize": (COLUMN_WIDTH, 3.4),
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "legend.fontsize": 10,
    "figure.titlesize": 11,
    "image.cmap": "viridis",
    "grid.alpha": 0.3,
}


def _as_matrix(weights) -> torch.Tensor:
    matrix = torch.as_tensor(weights).detach().float().cpu()
    if matrix.dim() != 2:
        raise ValueError(f"expected a 2-D matrix of weights, got shape {tuple(matrix.shape)}")
    return matrix


def attention_heatmap(
    weights,
    queries: Sequence[str] | None = None,
    keys: Sequence[str] | None = None,
    *,
    ax: plt.Axes | None = None,
    title: str | None = None,
    annotate: bool = False,
    colorbar: bool = True,
    cmap: str | None = None,
    xlabel: str = "key (attended to)",
    ylabel: str = "query",
) -> plt.Axes:
    """Draw one attention matrix: rows are queries, columns the keys they attend to.

    ``weights`` is ``(T_q, T_k)``.  ``annotate=True`` writes each probability
    in its cell (readable up to about 12 x 12).  Any non-negative matrix with
    labelled rows and columns works (co-occurrence counts, say), with its own
    ``xlabel`` and ``ylabel``.  ``cmap`` defaults to the style's colour map.
    """
    matrix = _as_matrix(weights)
    if ax is None:
        size = min(COLUMN_WIDTH, max(3.0, 0.45 * matrix.shape[1] + 1.5))
        _, ax = plt.subplots(figsize=(size, max(2.5, 0.45 * matrix.shape[0] + 1.0)))
    image = ax.imshow(matrix.numpy(), cmap=cmap, vmin=0.0, vmax=max(1e-9, float(matrix.max())))
    for labels, length in ((keys, matrix.shape[1]), (queries, matrix.shape[0])):
        if labels is not None and len(labels) != length:
            raise ValueError(f"{len(labels)} labels for an axis of length {length}")
    if keys is not None:
        ax.set_xticks(range(len(keys)), keys, rotation=60, ha="right")
    if queries is not None:
        ax.set_yticks(range(len(queries)), queries)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    if annotate:
        threshold = float(matrix.max()) / 2
        for i in range(matrix.shape[0]):
            for j in range(matrix.shape[1]):
                value = float(matrix[i, j])
                ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=7,
                        color="black" if value > threshold else "white")
    if colorbar:
        ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return ax


def attention_heads(
    weights,
    queries: Sequence[str] | None = None,
    keys: Sequence[str] | None = None,
    *,
    ncols: int = 2,
    title: str | None = None,
) -> plt.Figure:
    """Draw every head of one layer in a grid of ``ncols`` columns; ``weights`` is ``(H, T_q, T_k)``.

    Two columns by default: a row of panels shares the column's width (``COLUMN_WIDTH``), and
    four maps in a row leave their token labels too small to read."""
    stack = torch.as_tensor(weights).detach().float().cpu()
    if stack.dim() != 3:
        raise ValueError(f"expected (heads, queries, keys) weights, got shape {tuple(stack.shape)}")
    heads = stack.shape[0]
    ncols = min(ncols, heads)
    nrows = math.ceil(heads / ncols)
    width = min(COLUMN_WIDTH, 3.2 * ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, width / ncols * 0.95 * nrows),
                             squeeze=False)
    for head, ax in enumerate(axes.flat):
        if head >= heads:
            ax.axis("off")
            continue
        attention_heatmap(stack[head], queries, keys, ax=ax, title=f"head {head}", colorbar=False)
        if head % ncols:
            ax.set_ylabel("")
            ax.set_yticks([])
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_curves(
    curves: dict[str, tuple[Sequence[float], Sequence[float]]],
    *,
    xlabel: str = "step",
    ylabel: str = "loss",
    ax: plt.Axes | None = None,
    title: str | None = None,
    logy: bool = False,
) -> plt.Axes:
    """Plot named ``(x, y)`` curves on one set of axes (training curves, sweeps)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    for name, (xs, ys) in curves.items():
        ax.plot(list(xs), list(ys), label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logy:
        ax.set_yscale("log")
    if title:
        ax.set_title(title)
    if len(curves) > 1:
        ax.legend()
    ax.grid(alpha=0.3)
    return ax


#: The multiples of each power of ten that label a log axis, sparsest first: an axis takes the
#: first set that puts at least ``MIN_LOG_LABELS`` labels inside it.  Across a power of ten or
#: less, 1, 2 and 5 times each would leave one or two labels (0.1 and 0.2 on an axis from 0.055
#: to 0.3; 5 alone from 3 to 6.5), and with three (5, 7, 10 on perplexities from 3.05 to 11)
#: the lower part of the axis, where the best models end, would read nothing.
LOG_LABEL_MULTIPLES = ((1.0, 2.0, 5.0), (1.0, 1.5, 2.0, 3.0, 5.0, 7.0), tuple(float(k) for k in range(1, 10)))
MIN_LOG_LABELS = 4


def plain_log_ticks(ax: plt.Axes, xs: Sequence[float] | None = None, *, plain_x: bool = False) -> plt.Axes:
    """Label log-scaled axes with plain numbers ("64", "0.5") instead of powers of ten: the
    x ticks at ``xs`` when given (the lengths or sizes measured), the y ticks (and, with
    ``plain_x``, the x ticks) at 1, 2 and 5 times each power of ten, or closer on a narrow axis
    (``LOG_LABEL_MULTIPLES``).  Call it once the data are drawn: it reads the limits.

    ``plain_x`` is not the default because an axis across many powers of ten (characters
    trained, 10^5 to 10^7) reads better as powers than as 100000, 200000 ..."""
    from matplotlib.ticker import NullFormatter

    if xs is not None:
        ax.set_xticks(list(xs), [f"{x:g}" for x in xs])
        ax.xaxis.set_minor_formatter(NullFormatter())
    elif plain_x and ax.get_xscale() == "log":
        _label_log_axis_plainly(ax.xaxis, ax.get_xlim())
    if ax.get_yscale() == "log":
        _label_log_axis_plainly(ax.yaxis, ax.get_ylim())
    return ax


def _label_log_axis_plainly(axis, limits: tuple[float, float]) -> None:
    from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

    low, high = sorted(limits)  # an inverted axis reads them the other way round
    multiples = LOG_LABEL_MULTIPLES[0]  # no limits a log axis can have yet: the sparsest labels
    if low > 0:
        # counted here: LogLocator's tick_values turns to evenly spaced ticks where its own fall short
        powers = [10.0**p for p in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)]
        for multiples in LOG_LABEL_MULTIPLES:
            if sum(low <= m * power <= high for power in powers for m in multiples) >= MIN_LOG_LABELS:
                break
    axis.set_major_locator(LogLocator(base=10, subs=multiples))
    axis.set_major_formatter(FormatStrFormatter("%g"))
    axis.set_minor_formatter(NullFormatter())


def project_2d(vectors: torch.Tensor) -> torch.Tensor:
    """The rows of ``vectors`` (N, d) projected on their first two principal components: (N, 2)."""
    centered = vectors.double() - vectors.double().mean(dim=0)
    _, _, v = torch.linalg.svd(centered, full_matrices=False)  # rows of v: principal directions
    return (centered @ v[:2].T).float()  # (N, 2)


# Where a label may sit around its point, in the order tried: the four diagonals, above and
# below, level with it, then the sixteenths of the circle between; each at the distances
# (points) of LABEL_DISTANCES, nearest first.
LABEL_ANGLES = (45, 315, 135, 225, 90, 270, 0, 180, 22.5, 337.5, 157.5, 202.5, 67.5, 292.5, 112.5, 247.5)
LABEL_DISTANCES = (3, 10, 18, 28, 40, 55)


class PlacedLabels(Artist):
    """Labels written beside points, each at the first place tried (``LABEL_ANGLES`` at
    ``LABEL_DISTANCES``) where it overlaps no label written before it, no other point, none of
    the ``segments`` (the arrows drawn between points, each a pair of points) and no edge of the
    axes; a label further than the nearest distance gets a thin line back to its point.

    The places are chosen each time the figure is drawn, for the axes' size and limits then:
    a title, ``tight_layout`` or the panels made after this one change both, and words whose
    vectors nearly coincide (blaze and government, say) would print on top of each other if
    placed before.  After a draw, ``texts`` holds the labels written and ``crowded`` those that
    found no free place: each is written at the first place tried, where it may cover something."""

    def __init__(self, points: Sequence[tuple[float, float]], labels: Sequence[str], *,
                 fontsize: float = 10,
                 segments: Sequence[tuple[tuple[float, float], tuple[float, float]]] = ()):
        super().__init__()
        if len(points) != len(labels):
            raise ValueError(f"{len(labels)} labels for {len(points)} points")
        self.points, self.labels = [tuple(point) for point in points], list(labels)
        self.fontsize, self.segments = fontsize, list(segments)
        self.texts: list[Annotation] = []
        self.crowded: list[str] = []
        # The last placement and what it was made for: a save with a tight bounding box asks for
        # the extent and then draws, for the same size and limits, and need not place twice.
        self._placed: tuple[tuple, tuple[list[Annotation], list[str]]] | None = None
        # A label with no free place may stick out of the axes: the layout and a tight bounding box
        # make room for it (get_window_extent), which a clip to the axes would hide from them.
        self.set_clip_on(False)
        self.set_zorder(3)  # with the axes' other text

    @artist.allow_rasterization
    def draw(self, renderer) -> None:
        if not self.get_visible():
            return
        self.texts, self.crowded = self._place(renderer)
        for text in self.texts:
            text.draw(renderer)
        self.stale = False

    def get_window_extent(self, renderer=None) -> Bbox:
        """Where the labels go, words and lines, for ``tight_layout`` and ``bbox_inches="tight"``."""
        renderer = renderer or self.figure.canvas.get_renderer()
        boxes = [text.get_window_extent(renderer) for text in self._place(renderer)[0]]
        return Bbox.union(boxes) if boxes else Bbox.null()

    def _place(self, renderer) -> tuple[list[Annotation], list[str]]:
        ax = self.axes
        frame = ax.get_window_extent(renderer)
        pixels = ax.transData.transform(self.points) if self.points else []  # (N, 2) display coordinates
        # Everything a place depends on: the axes' size, where the points and segments land in it,
        # the renderer's points-to-pixels scale (its dpi), the labels and their size.  Not where the
        # axes are on the canvas: a tight save moves them between asking and drawing.
        ends = ax.transData.transform([end for segment in self.segments for end in segment]) \
            if self.segments else []  # (2 x segments, 2)

        def inside(xy) -> tuple:
            return tuple((round(x - frame.x0, 2), round(y - frame.y0, 2)) for x, y in xy)

        key = (round(frame.width, 2), round(frame.height, 2), inside(pixels), inside(ends),
               renderer.points_to_pixels(1.0), self.fontsize, tuple(self.labels))
        if self._placed is not None and self._placed[0] == key:
            return self._placed[1]
        self._placed = (key, self._choose_places(renderer, frame, pixels, ends))
        return self._placed[1]

    def _choose_places(self, renderer, frame: Bbox, pixels, ends) -> tuple[list[Annotation], list[str]]:
        ax = self.axes
        radius = renderer.points_to_pixels(4)  # a marker of s=12 is 3.5 points across, and some room
        dots = [Bbox.from_bounds(x - radius, y - radius, 2 * radius, 2 * radius) for x, y in pixels]
        lines = [Path(ends[i:i + 2]) for i in range(0, len(ends), 2)]  # each segment, display coordinates
        line = {"arrowstyle": "-", "color": "0.55", "lw": 0.6, "shrinkA": 0, "shrinkB": 2}

        def write(label, x, y, angle, distance):
            dx, dy = math.cos(math.radians(angle)), math.sin(math.radians(angle))
            text = Annotation(label, (x, y), xytext=(distance * dx, distance * dy), textcoords="offset points",
                              ha="left" if dx > 0.3 else "right" if dx < -0.3 else "center",
                              va="bottom" if dy > 0.3 else "top" if dy < -0.3 else "center",
                              fontsize=self.fontsize,
                              arrowprops=line if distance > LABEL_DISTANCES[0] else None)
            text.set_figure(self.figure)
            text.axes = ax
            text.update_positions(renderer)
            return text, Text.get_window_extent(text, renderer)  # the words alone, not the line

        texts, boxes, crowded = [], [], []
        for i, ((x, y), label) in enumerate(zip(self.points, self.labels)):
            others = boxes + dots[:i] + dots[i + 1:]
            places = ((angle, distance) for distance in LABEL_DISTANCES for angle in LABEL_ANGLES)
            for angle, distance in places:
                text, box = write(label, x, y, angle, distance)
                inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
                if (inside and not any(box.overlaps(other) for other in others)
                        and not any(path.intersects_bbox(box, filled=False) for path in lines)):
                    break
            else:
                crowded.append(label)
                text, box = write(label, x, y, LABEL_ANGLES[0], LABEL_DISTANCES[0])
            texts.append(text)
            boxes.append(box)
        return texts, crowded


def label_points(ax: plt.Axes, points: Sequence[tuple[float, float]], labels: Sequence[str],
                 fontsize: float = 10,
                 segments: Sequence[tuple[tuple[float, float], tuple[float, float]]] = ()) -> PlacedLabels:
    """Write ``labels[i]`` beside ``points[i]`` (data coordinates) where it covers nothing, placed
    when the figure is drawn (``PlacedLabels``): returns the artist, whose ``crowded`` lists
    after a draw the labels that found no free place."""
    return ax.add_artist(PlacedLabels(points, labels, fontsize=fontsize, segments=segments))


def word_map(
    vectors: torch.Tensor,
    words: Sequence[str],
    *,
    arrows: Sequence[tuple[str, str]] = (),
    ax: plt.Axes | None = None,
    title: str | None = None,
) -> plt.Axes:
    """Words placed by the first two principal components of their vectors (N, d), row i for
    ``words[i]``; ``arrows`` draws an arrow from one word to another (analogies: man -> king)."""
    if len(words) != vectors.shape[0]:
        raise ValueError(f"{len(words)} words for {vectors.shape[0]} vectors")
    points = project_2d(vectors)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 5))
    ax.scatter(points[:, 0], points[:, 1], s=12, color="tab:blue")
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title)
    where = {word: points[i].tolist() for i, word in enumerate(words)}
    segments = [(where[start], where[end]) for start, end in arrows]
    label_points(ax, points.tolist(), words, segments=segments)  # placed when drawn, clear of the arrows
    for (x0, y0), (x1, y1) in segments:
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0), arrowprops={"arrowstyle": "->", "color": "tab:red", "alpha": 0.6})
    return ax
