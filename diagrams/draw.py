"""The book's schematic diagrams, drawn as SVG: one function per diagram, one style for all.

Run ``python diagrams/draw.py`` from the repository root after changing a drawing; it rewrites
``book/NN-chapter/diagrams/NAME.svg``, which are committed (``tests/test_diagrams.py`` fails when
they differ from what this script draws). Standard library only.

The style, shared by every drawing:

- a canvas :data:`WIDTH` units wide, the width of the book's text column in pixels at desktop width,
  with a ``viewBox`` and no fixed size, so that a unit is a pixel there and the drawing scales down
  on a phone;
- one font family and two sizes (:data:`SIZE`, :data:`SMALL`; subscripts at :data:`SUB`);
- the colours of matplotlib's default cycle (tab10), which the book's plots use: full strength for
  outlines and lines, a light tint for fills, with the same meaning across the chapters where one
  applies (inputs blue, states orange, outputs green, masks and gradients red, attention purple);
- every drawing on its own light, rounded panel: an ``<img>`` cannot see the page's dark mode, and
  the panel keeps the dark lines legible on a dark page.

Labels use a little markup: ``h_t``, ``h_{t-1}`` (subscripts), ``x^2``, ``W^{(1)}`` (superscripts),
``\\_`` for a literal underscore.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

REPO = Path(__file__).resolve().parents[1]

WIDTH = 760
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
SIZE = 16  # labels
SMALL = 14  # shapes and notes
SUB = 0.75  # subscripts and superscripts, as a share of the size around them
LINE = 1.6  # arrows and wires
OUTLINE = 1.4  # boxes
HEAD = 9  # arrowhead length
PAD = 14  # the panel's margin, kept clear

INK = "#222222"
MUTED = "#555555"
PANEL = "#ffffff"
PANEL_EDGE = "#d4d4d4"

# matplotlib's tab10, the colours of the book's plots (nlpbook.plot draws with the default cycle).
BLUE, ORANGE, GREEN, RED, PURPLE = "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"
BROWN, PINK, GRAY, OLIVE, CYAN = "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"

# What each colour means where the meaning carries from chapter to chapter.
INPUT, STATE, OUTPUT, HIDDEN, ATTENTION = BLUE, ORANGE, GREEN, RED, PURPLE
NORM, FFN = GRAY, CYAN
HEADS = (BLUE, ORANGE, GREEN)


def tint(color: str, amount: float = 0.82) -> str:
    """``color`` mixed with white: ``amount`` 0 is the colour, 1 is white."""
    rgb = [int(color[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(c + (255 - c) * amount):02x}" for c in rgb)


def _n(value: float) -> str:
    """A coordinate as the SVG text gives it: one decimal at most, no trailing zero."""
    text = f"{value:.1f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


# --- text -----------------------------------------------------------------------------------------

def _spans(label: str, shift: float = 0.0, scale: float = 1.0) -> list[tuple[str, float, float]]:
    """``label`` cut into (text, baseline shift in ems of the full size, size as a share of it) pieces.

    ``_x`` and ``_{...}`` are subscripts, ``^x`` and ``^{...}`` superscripts; they nest (at the size of a
    subscript: smaller would not be legible on a phone)."""
    spans: list[tuple[str, float, float]] = []
    i, plain = 0, ""
    while i < len(label):
        char = label[i]
        if char == "\\" and label[i + 1:i + 2] == "_":
            plain, i = plain + "_", i + 2
        elif char in "_^" and i + 1 < len(label):
            if plain:
                spans.append((plain, shift, scale))
                plain = ""
            if label[i + 1] == "{":
                depth, j = 1, i + 2
                while depth:
                    depth += {"{": 1, "}": -1}.get(label[j], 0)
                    j += 1
                body, i = label[i + 2:j - 1], j
            else:
                body, i = label[i + 1], i + 2
            offset = 0.28 * scale if char == "_" else -0.38 * scale
            spans += _spans(body, shift + offset, SUB)  # nested: no smaller than a subscript
        else:
            plain, i = plain + char, i + 1
    if plain:
        spans.append((plain, shift, scale))
    return spans


# Advance widths of DejaVu Sans, the widest of the font stack, in ems, roughly by class of letter.
_NARROW = set("fijlrt.,:;'|!()[]{} ")
_WIDE = set("mwMW%")


def _char_width(char: str) -> float:
    if char in _NARROW:
        return 0.34
    if char in _WIDE:
        return 0.92
    if char.isupper() or char in "#&@~±":
        return 0.74
    if char in "⊙⊕→←·−+=×√∞":
        return 0.84
    return 0.62


def text_width(label: str, size: float = SIZE) -> float:
    """About how wide ``label`` is drawn at ``size`` (an overestimate for Helvetica and Arial)."""
    return sum(sum(_char_width(char) for char in text) * size * scale for text, _, scale in _spans(label))


def _tspans(label: str, size: float) -> str:
    parts, current = [], 0.0
    for text, shift, scale in _spans(label):
        attributes = ""
        if shift != current:
            attributes += f' dy="{_n((shift - current) * size)}"'
            current = shift
        if scale != 1:
            attributes += f' font-size="{_n(size * scale)}"'
        parts.append(f"<tspan{attributes}>{escape(text)}</tspan>" if attributes else escape(text))
    return "".join(parts)


# --- the drawing ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Box:
    """A box's place: centre and size, and the middles of its four sides."""

    cx: float
    cy: float
    w: float
    h: float

    @property
    def top(self):
        return (self.cx, self.cy - self.h / 2)

    @property
    def bottom(self):
        return (self.cx, self.cy + self.h / 2)

    @property
    def left(self):
        return (self.cx - self.w / 2, self.cy)

    @property
    def right(self):
        return (self.cx + self.w / 2, self.cy)


class Drawing:
    """An SVG canvas :data:`WIDTH` units wide on a light rounded panel (keep :data:`PAD` clear at its
    edges); :meth:`svg` gives its text."""

    def __init__(self, height: float, title: str, width: float = WIDTH):
        self.width, self.height, self.title = width, height, title
        self.elements: list[str] = []

    # shapes
    def rect(self, x, y, w, h, fill="none", stroke=INK, rx=6.0, stroke_width=OUTLINE, dash=None):
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        stroke_text = f' stroke="{stroke}" stroke-width="{_n(stroke_width)}"' if stroke != "none" else ""
        self.elements.append(f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}" rx="{_n(rx)}" '
                             f'fill="{fill}"{stroke_text}{dashed}/>')

    def box(self, cx, cy, w, h, label="", color=GRAY, *, fill=None, size=SIZE, italic=False, bold=False,
            dash=None, rx=6.0, text_color=INK) -> Box:
        """A rounded box centred on (cx, cy), outlined in ``color`` and filled with its tint."""
        self.rect(cx - w / 2, cy - h / 2, w, h, fill=fill or tint(color), stroke=color, rx=rx, dash=dash)
        if label:
            lines = label.split("\n")
            for line in lines:
                if text_width(line, size) > w - 6:
                    raise ValueError(f"{self.title}: label {line!r} ({text_width(line, size):.0f}) is too wide "
                                     f"for its box ({w})")
            self.label(cx, cy, label, size=size, italic=italic, bold=bold, color=text_color)
        return Box(cx, cy, w, h)

    def label(self, x, y, label, *, size=SIZE, anchor="middle", color=INK, italic=False, bold=False):
        """Text centred vertically on ``y``; ``anchor`` is start, middle or end; lines split at newlines."""
        lines = label.split("\n")
        step = 1.25 * size
        for i, line in enumerate(lines):
            line_y = y + (i - (len(lines) - 1) / 2) * step
            style = (' font-style="italic"' if italic else "") + (' font-weight="bold"' if bold else "")
            size_text = f' font-size="{_n(size)}"' if size != SIZE else ""
            anchor_text = f' text-anchor="{anchor}"' if anchor != "start" else ""
            fill = f' fill="{color}"' if color != INK else ""
            self.elements.append(f'<text x="{_n(x)}" y="{_n(line_y)}" dominant-baseline="central"'
                                 f'{anchor_text}{size_text}{style}{fill}>{_tspans(line, size)}</text>')

    def line(self, points, color=INK, width=LINE, dash=None, halo=False):
        path = " ".join(f"{_n(x)},{_n(y)}" for x, y in points)
        if halo:  # a wide white line under this one: it crosses the lines drawn before it with a gap
            self.elements.append(f'<polyline points="{path}" fill="none" stroke="{PANEL}" '
                                 f'stroke-width="{_n(width + 6)}"/>')
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        self.elements.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="{_n(width)}" '
                             f'stroke-linejoin="round"{dashed}/>')

    def arrow(self, *points, color=INK, width=LINE, dash=None, halo=False, both=False):
        """A polyline through ``points`` with a head at its end (and at its start, ``both``)."""
        points = list(points)
        heads = []
        points[-1], head = self._head(points[-2], points[-1], color, width)
        heads.append(head)
        if both:
            points[0], head = self._head(points[1], points[0], color, width)
            heads.append(head)
        self.line(points, color, width, dash, halo)
        self.elements.extend(heads)

    def _head(self, start, end, color, width):
        """An arrowhead at ``end`` pointing away from ``start``: where the line should stop, and the head."""
        (x0, y0), (x1, y1) = start, end
        length = math.hypot(x1 - x0, y1 - y0)
        ux, uy = (x1 - x0) / length, (y1 - y0) / length
        size = HEAD + (width - LINE)
        half = 0.45 * size
        bx, by = x1 - ux * size, y1 - uy * size
        corners = [(x1, y1), (bx - uy * half, by + ux * half), (bx + uy * half, by - ux * half)]
        head = f'<polygon points="{" ".join(f"{_n(x)},{_n(y)}" for x, y in corners)}" fill="{color}"/>'
        return (x1 - ux * size * 0.6, y1 - uy * size * 0.6), head

    def dot(self, cx, cy, color=INK):
        """A junction: a filled dot where a wire branches off another, so that it does not read as a crossing."""
        self.elements.append(f'<circle cx="{_n(cx)}" cy="{_n(cy)}" r="3.5" fill="{color}"/>')

    def op(self, cx, cy, kind="+", r=11.0, color=INK) -> Box:
        """An operation node: ``+`` (a sum) or ``*`` (the elementwise product, drawn as a dot in a circle)."""
        self.elements.append(f'<circle cx="{_n(cx)}" cy="{_n(cy)}" r="{_n(r)}" fill="{PANEL}" stroke="{color}" '
                             f'stroke-width="{_n(OUTLINE)}"/>')
        if kind == "+":
            a = 0.6 * r
            self.line([(cx - a, cy), (cx + a, cy)], color, OUTLINE)
            self.line([(cx, cy - a), (cx, cy + a)], color, OUTLINE)
        elif kind == "*":
            self.elements.append(f'<circle cx="{_n(cx)}" cy="{_n(cy)}" r="{_n(0.25 * r)}" fill="{color}"/>')
        else:
            raise ValueError(kind)
        return Box(cx, cy, 2 * r, 2 * r)

    def grid(self, x, y, rows, cols, cell, fill, stroke=MUTED, gap_every=None, gap=0.0):
        """A grid of ``rows`` x ``cols`` square cells from (x, y); ``fill(r, c)`` colours each cell.
        ``gap_every`` columns, a gap of ``gap`` (heads side by side)."""
        for r in range(rows):
            for c in range(cols):
                offset = (c // gap_every) * gap if gap_every else 0.0
                self.elements.append(f'<rect x="{_n(x + c * cell + offset)}" y="{_n(y + r * cell)}" '
                                     f'width="{_n(cell)}" height="{_n(cell)}" fill="{fill(r, c)}" '
                                     f'stroke="{stroke}" stroke-width="0.8"/>')
        width = cols * cell + ((cols - 1) // gap_every) * gap if gap_every else cols * cell
        return Box(x + width / 2, y + rows * cell / 2, width, rows * cell)

    def svg(self) -> str:
        body = "\n".join("  " + element for element in self.elements)
        return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_n(self.width)} {_n(self.height)}" '
                f'font-family="{FONT}" font-size="{SIZE}" fill="{INK}">\n'
                f"  <title>{escape(self.title)}</title>\n"
                f'  <rect x="1" y="1" width="{_n(self.width - 2)}" height="{_n(self.height - 2)}" rx="14" '
                f'fill="{PANEL}" stroke="{PANEL_EDGE}" stroke-width="1"/>\n'
                f"{body}\n</svg>\n")


# --- chapter 1 ------------------------------------------------------------------------------------

def skipgram_cbow() -> Drawing:
    """Skip-gram predicts each context word from the center word; CBOW predicts the center from its context."""
    d = Drawing(330, "Skip-gram and CBOW")
    words = ["a", "quick", "brown", "fox", "jumps"]
    step, word_y, vector_y, out_y = 68, 282, 200, 110
    d.line([(380, 24), (380, 296)], GRAY, 1, dash="4 4")
    for panel, centre in (("skip-gram", 192), ("CBOW", 568)):
        xs = [centre + (i - 2) * step for i in range(5)]
        d.label(centre, 30, panel, bold=True)
        d.label(centre, 54, "each context word from the center" if panel == "skip-gram"
                else "the center word from its context", size=SMALL, color=MUTED)
        d.label(centre, 308, "a window of m = 2 words on each side", size=SMALL, color=MUTED)
        for i, (x, word) in enumerate(zip(xs, words)):
            if (i == 2) == (panel == "skip-gram"):  # what the model reads
                d.box(x, word_y, 62, 30, word, INPUT)
            else:
                d.box(x, word_y, 62, 30, word, GRAY, fill=PANEL, dash="4 3", text_color=MUTED)
        if panel == "skip-gram":
            vector = d.box(centre, vector_y, 56, 32, "v_c", STATE, italic=True)
            d.arrow((centre, word_y - 15), vector.bottom)
            for i, (x, word) in enumerate(zip(xs, words)):
                if i == 2:
                    continue
                target = d.box(x, out_y, 62, 30, word, OUTPUT)
                d.arrow(vector.top, target.bottom)
            d.label(centre, 140, "u_o^T v_c", size=SMALL, italic=True)
        else:
            average = d.box(centre, vector_y, 150, 32, "mean of v_{o_j}", STATE, italic=False)
            for i, x in enumerate(xs):
                if i != 2:
                    d.arrow((x, word_y - 15), (centre + (i - 2) * 24, vector_y + 16))
            target = d.box(centre, out_y, 62, 30, "brown", OUTPUT)
            d.arrow(average.top, target.bottom)
            d.label(centre + 10, 155, "u_c^T ·", size=SMALL, italic=True, anchor="start")
    return d


def fasttext_units() -> Drawing:
    """fastText's input side: a word, its units (itself and its character n-grams), their rows
    (the word's own row, the n-grams' hashed bucket rows), the sum, and skip-gram from there."""
    d = Drawing(370, "fastText: a word as the sum of its units")
    top = 30
    for x, text in ((62, "the word"), (215, "its units"), (380, "one table of rows"),
                    (540, "the sum"), (688, "context")):
        d.label(x, top, text, size=SMALL, color=MUTED)
    word = d.box(62, 185, 84, 32, "where", INPUT)
    units = ["<where>", "<wh", "whe", "her", "ere", "re>", "<whe"]
    unit_ys = [70 + 34 * i for i in range(len(units))]
    boxes = []
    for y, unit in zip(unit_ys, units):
        boxes.append(d.box(215, y, 92, 26, unit, GRAY if unit == "<where>" else INPUT,
                           size=SMALL))
        d.line([word.right, (169, y)], MUTED, 1)
    d.label(215, 70 + 34 * len(units) - 4, "… 14 n-grams of 3 to 6", size=SMALL, color=MUTED)
    # the table: V rows of whole words, then K rows of hashed n-gram buckets
    cell, x0 = 16, 340
    word_rows, bucket_rows = 4, 12
    word_row, bucket_hits = 1, [0, 2, 5, 6, 9, 11]
    words_top, buckets_top = 56, 56 + word_rows * cell + 14
    d.grid(x0, words_top, word_rows, 1, cell,
           lambda r, c: tint(STATE, 0.4) if r == word_row else PANEL)
    d.grid(x0, buckets_top, bucket_rows, 1, cell,
           lambda r, c: tint(STATE, 0.4) if r in bucket_hits else PANEL)
    d.label(x0 + cell + 8, words_top + cell / 2, "V words", size=SMALL, anchor="start")
    d.label(x0 + cell / 2, buckets_top + bucket_rows * cell + 18,
            "K buckets: row hash(g) mod K", size=SMALL)
    targets = [words_top + (word_row + 0.5) * cell] + [buckets_top + (r + 0.5) * cell
                                                        for r in bucket_hits]
    for box, y in zip(boxes, targets):
        d.arrow(box.right, (x0, y), color=MUTED, width=1.2)
    total = d.op(540, 185, "+")
    for y in targets:
        d.line([(x0 + cell, y), (total.cx - 11, total.cy)], tint(STATE, 0.2), 1)
    vector = d.box(540, 255, 56, 32, "v_w", STATE, italic=True)
    d.arrow(total.bottom, vector.top)
    d.label(540, 300, "v_w = Σ_g z_g", size=SMALL, italic=True)
    for y, context in zip((110, 185, 260), ("did", "you", "go")):
        target = d.box(688, y, 62, 30, context, OUTPUT)
        d.arrow(vector.right, target.left)
    d.label(688, 315, "u_c^T v_w", size=SMALL, italic=True)
    return d


# --- chapter 2 ------------------------------------------------------------------------------------

def ngram_window() -> Drawing:
    """A 4-gram model of characters: the next character from the last three, by counting, and the
    interpolated estimate falling back from the longest history to the uniform distribution."""
    d = Drawing(330, "An n-gram model of characters")
    text, cell, row_y = "and the lor", 44, 78
    x0 = (WIDTH - len(text) * cell) / 2  # the row of characters, centred
    d.label(WIDTH / 2, 28, "a 4-gram model: the next character from the last n − 1 = 3",
            size=SMALL, color=MUTED)
    xs = [x0 + i * cell for i in range(len(text) + 1)]
    for i, (x, char) in enumerate(zip(xs, text)):
        shown = "␣" if char == " " else char
        if i >= len(text) - 3:
            d.box(x, row_y, 38, 34, shown, INPUT)
        else:
            d.box(x, row_y, 38, 34, shown, GRAY, fill=PANEL, dash="4 3", text_color=MUTED)
    target = d.box(xs[-1], row_y, 38, 34, "d", OUTPUT)
    d.label((xs[0] + xs[len(text) - 4]) / 2, row_y + 36, "outside the window: never read",
            size=SMALL, color=MUTED)
    d.label(xs[len(text) - 2], row_y + 36, "history h", size=SMALL)
    d.label(target.cx, row_y + 36, "next w", size=SMALL)
    # the counts, then the chain of interpolated estimates
    chain_y = 245
    names = [("p_4(d | lor)", "c(lor d) / c(lor)"), ("p_3(d | or)", "c(or d) / c(or)"),
             ("p_2(d | r)", "c(r d) / c(r)"), ("p_1(d)", "c(d) / N"), ("p_0 = 1/V", "uniform")]
    chain_xs = [96 + i * 142 for i in range(len(names))]
    boxes = []
    for x, (name, count) in zip(chain_xs, names):
        boxes.append(d.box(x, chain_y, 124, 34, name, STATE if name != "p_0 = 1/V" else GRAY,
                           italic=True, size=SMALL))
        d.label(x, chain_y - 34, count, size=SMALL, italic=True, color=MUTED)
    for higher, lower in zip(boxes, boxes[1:]):
        d.arrow(lower.left, higher.right)
    d.label(WIDTH / 2, 170, "the counts of every ending of the history, the longest first",
            size=SMALL)
    d.label(WIDTH / 2, 296, "each order mixes its own count ratio with the estimate of the order "
            "below", size=SMALL, color=MUTED)
    return d


def rnn_unrolled() -> Drawing:
    """The Elman RNN folded (one step and its loop) and unrolled over T steps with the same U, W, V."""
    d = Drawing(320, "The RNN, folded and unrolled")
    o_y, h_y, x_y = 55, 150, 245

    def column(x, t):
        out = d.box(x, o_y, 52, 34, f"o_{t}", OUTPUT, italic=True)
        state = d.box(x, h_y, 52, 34, f"h_{t}", STATE, italic=True)
        read = d.box(x, x_y, 52, 34, f"x_{t}", INPUT, italic=True)
        d.arrow(read.top, state.bottom)
        d.arrow(state.top, out.bottom)
        d.label(x - 8, (h_y + x_y) / 2, "W", size=SMALL, italic=True, anchor="end")
        d.label(x - 8, (o_y + h_y) / 2, "V", size=SMALL, italic=True, anchor="end")
        return state

    # folded: one step, with the state fed back
    folded = column(80, "t")
    d.arrow((106, h_y - 8), (136, h_y - 8), (136, h_y - 44), (96, h_y - 44), (96, h_y - 17))
    d.label(144, h_y - 30, "U", size=SMALL, italic=True, anchor="start")
    d.label(80, 296, "one step, its loop", size=SMALL, color=MUTED)
    d.line([(184, 30), (184, 280)], GRAY, 1, dash="4 4")
    # unrolled
    first = d.box(232, h_y, 46, 34, "h_0", STATE, italic=True)
    previous = first
    xs = [322, 414, 506, 676]
    for x, t in zip(xs, ["1", "2", "3", "T"]):
        if t == "T":
            d.label(591, h_y, "⋯")
            d.arrow(previous.right, (572, h_y))
            d.label(591, o_y, "⋯")
            d.label(591, x_y, "⋯")
            previous = Box(591, h_y, 38, 34)
        state = column(x, t)
        d.arrow(previous.right, state.left)
        d.label((previous.right[0] + state.left[0]) / 2, h_y - 13, "U", size=SMALL, italic=True)
        previous = state
    d.label(470, 296, "unrolled over T steps: the same U, W and V at every step", size=SMALL, color=MUTED)
    return d


def bptt() -> Drawing:
    """Backpropagation through time: each step back multiplies the gradient by a transposed Jacobian."""
    d = Drawing(330, "Gradient flow through time")
    xs = [80, 200, 320, 430, 540, 670]
    names = ["t", "t+1", "t+2", None, "T-1", "T"]
    l_y, h_y = 55, 170
    boxes = []
    for x, name in zip(xs, names):
        if name is None:
            d.label(x, h_y, "⋯")
            d.label(x, l_y, "⋯")
            boxes.append(Box(x, h_y, 30, 36))
            continue
        loss = d.box(x, l_y, 64, 34, f"L_{{{name}}}", OUTPUT, italic=True)
        state = d.box(x, h_y, 64, 36, f"h_{{{name}}}", STATE, italic=True)
        d.arrow((x - 9, state.top[1]), (x - 9, loss.bottom[1]))
        d.arrow((x + 9, loss.bottom[1]), (x + 9, state.top[1]), color=HIDDEN)
        boxes.append(state)
    for i, (left, right) in enumerate(zip(boxes, boxes[1:])):
        d.arrow((left.right[0], h_y - 9), (right.left[0], h_y - 9))
        d.arrow((right.left[0], h_y + 9), (left.right[0], h_y + 9), color=HIDDEN)
        name = names[i + 1]
        if name is not None and names[i] is not None:
            d.label((left.right[0] + right.left[0]) / 2, h_y + 28, f"J_{{{name}}}^T", size=SMALL, italic=True,
                    color=HIDDEN)
    d.arrow((30, 232), (62, 232))
    d.label(72, 232, "forward: h_k = tanh(U h_{k-1} + W x_k + b), then the losses L_k", size=SMALL, anchor="start")
    d.arrow((62, 262), (30, 262), color=HIDDEN)
    d.label(72, 262, "backward: each step back multiplies by J_k^T,  J_k = diag(1 − h_k^2) U", size=SMALL,
            anchor="start", color=HIDDEN)
    d.label(72, 292, "∂L_T/∂h_t = (J_T J_{T-1} ⋯ J_{t+1})^T ∂L_T/∂h_T :  T − t factors, which shrink or grow",
            size=SMALL, anchor="start")
    return d


def _vector_label(d: Drawing, cx, cy, label, direction, size=SIZE):
    """``label`` with a small arrow over it pointing right (``direction`` 1) or left (-1)."""
    d.label(cx, cy + 3, label, italic=True, size=size)
    half = 7
    d.arrow((cx - direction * half - 3, cy - 11), (cx + direction * half - 3, cy - 11), width=1.1)


def bidirectional_rnn() -> Drawing:
    """A bidirectional RNN: a left-to-right and a right-to-left RNN over the same inputs, concatenated."""
    d = Drawing(340, "A bidirectional RNN")
    xs = [175, 305, 435, 565]
    top_y, back_y, forward_y, x_y = 45, 125, 210, 292
    labels = [("concatenated", top_y), ("right to left", back_y), ("left to right", forward_y), ("inputs", x_y)]
    for text, y in labels:
        d.label(24, y, text, size=SMALL, anchor="start", color=MUTED)
    for text, y in (("(B, T, 2H)", top_y), ("(B, T, H)", back_y), ("(B, T, H)", forward_y), ("(B, T, I)", x_y)):
        d.label(736, y, text, size=SMALL, anchor="end", color=MUTED)
    forwards, backwards = [], []
    for t, x in enumerate(xs, 1):
        d.box(x, x_y, 52, 34, f"x_{t}", INPUT, italic=True)
        forwards.append(d.box(x - 30, forward_y, 50, 38, "", STATE))
        _vector_label(d, x - 30, forward_y, f"h_{t}", 1)
        backwards.append(d.box(x + 30, back_y, 50, 38, "", ATTENTION))
        _vector_label(d, x + 30, back_y, f"h_{t}", -1)
        d.box(x - 23, top_y, 46, 38, "", STATE)
        _vector_label(d, x - 23, top_y, f"h_{t}", 1)
        d.box(x + 23, top_y, 46, 38, "", ATTENTION)
        _vector_label(d, x + 23, top_y, f"h_{t}", -1)
    for left, right in zip(forwards, forwards[1:]):
        d.arrow((left.right[0], forward_y), right.left)
    for left, right in zip(backwards, backwards[1:]):
        d.arrow((right.left[0], back_y), left.right)
    for x in xs:  # inputs to both directions, and both states up to the concatenation
        d.line([(x, x_y - 17), (x, x_y - 36)])
        d.arrow((x, x_y - 36), (x - 30, x_y - 36), (x - 30, forward_y + 19))
        d.arrow((x, x_y - 36), (x + 30, x_y - 36), (x + 30, back_y + 19), halo=True)
        d.arrow((x - 30, forward_y - 19), (x - 23, top_y + 19), halo=True)
        d.arrow((x + 30, back_y - 19), (x + 23, top_y + 19))
    return d



def stacked_rnn() -> Drawing:
    """A stacked RNN: layer 2 reads the whole sequence of layer 1's states; only the last layer reaches the head."""
    d = Drawing(330, "A stacked RNN")
    xs = [200, 330, 460, 590]
    out_y, top_y, bottom_y, x_y = 42, 122, 210, 292
    for text, y in (("output head", out_y), ("layer 2", top_y), ("layer 1", bottom_y), ("inputs", x_y)):
        d.label(24, y, text, size=SMALL, anchor="start", color=MUTED)
    d.label(736, top_y, "(B, T, H)", size=SMALL, anchor="end", color=MUTED)
    d.label(736, bottom_y, "(B, T, H)", size=SMALL, anchor="end", color=MUTED)
    d.label(736, x_y, "(B, T, I)", size=SMALL, anchor="end", color=MUTED)
    layers = [[], []]
    for t, x in enumerate(xs, 1):
        d.box(x, out_y, 60, 32, f"ŷ_{t}", OUTPUT, italic=True)
        layers[1].append(d.box(x, top_y, 60, 38, f"h^{{(2)}}_{t}", STATE, italic=True))
        layers[0].append(d.box(x, bottom_y, 60, 38, f"h^{{(1)}}_{t}", STATE, italic=True))
        d.box(x, x_y, 60, 34, f"x_{t}", INPUT, italic=True)
        d.arrow((x, x_y - 17), (x, bottom_y + 19))
        d.arrow((x, bottom_y - 19), (x, top_y + 19))
        d.arrow((x, top_y - 19), (x, out_y + 16))
    for y, layer, name in ((bottom_y, layers[0], "U^{(1)}"), (top_y, layers[1], "U^{(2)}")):
        for left, right in zip(layer, layer[1:]):
            d.arrow(left.right, right.left)
            d.label((left.right[0] + right.left[0]) / 2, y - 13, name, size=SMALL, italic=True)
    d.label(xs[0] - 10, (x_y + bottom_y) / 2, "W^{(1)}", size=SMALL, italic=True, anchor="end")
    d.label(xs[0] - 10, (bottom_y + top_y) / 2, "W^{(2)}", size=SMALL, italic=True, anchor="end")
    return d


# --- chapter 3 ------------------------------------------------------------------------------------

CELL = BROWN  # the LSTM's cell state
GATE = GRAY


def _gate_bar(d: Drawing, x0, y, widths_and_labels, height=32):
    """A bar of adjacent cells (the stacked pre-activations), each labelled; returns their boxes."""
    boxes, x = [], x0
    for width, text in widths_and_labels:
        boxes.append(d.box(x + width / 2, y, width, height, text, INPUT, italic=True, rx=2))
        x += width
    return boxes


class _GatedCell:
    """The plan the LSTM and GRU cells share, so that the two figures read side by side and differ only where the
    cells do: a dashed frame; the carried state running straight across the top, through a ⊙ (the share a gate
    keeps) and a + (what the cell writes); the stacked pre-activations in a bar along the bottom; and between them
    the gates, each reading its part of the bar. :attr:`d` is the drawing; the cell's own function draws the rest."""

    PATH_Y, GATE_Y, BAR_Y = 70, 220, 290  # the carried state, the gates, the bar of pre-activations
    BAR_LEFT = 205  # where the bar starts: h_{t-1} enters it there

    def __init__(self, title: str, state: str, color: str, keep_x: float, add_x: float):
        """The frame and the path of ``state`` (``c`` or ``h``, in ``color``), with its ⊙ at ``keep_x`` and its +
        at ``add_x`` (kept as :attr:`keep` and :attr:`add`, for the wires that reach them from below)."""
        d = self.d = Drawing(390, title)
        y = self.PATH_Y
        d.rect(150, 28, 510, 318, stroke=GRAY, dash="6 5", rx=14)
        self.keep = d.op(keep_x, y, "*")
        self.add = d.op(add_x, y, "+")
        # thicker than the other wires: this path is what carries the state (and its gradient) across steps
        d.line([(28, y), (self.keep.left[0], y)], color, 2.6)
        d.line([(self.keep.right[0], y), (self.add.left[0], y)], color, 2.6)
        d.arrow((self.add.right[0], y), (732, y), color=color, width=2.6)
        d.label(36, y - 18, f"{state}_{{t-1}}", italic=True, anchor="start")
        d.label(724, y - 18, f"{state}_t", italic=True, anchor="end")

    def gate(self, x: float, name: str) -> Box:
        """A gate's activation (``name``: σ or tanh) at ``x``, fed from the part of the bar below it."""
        box = self.d.box(x, self.GATE_Y, 56, 34, name, GATE)
        self.d.arrow((x, self.BAR_Y - 16), box.bottom)
        return box

    def x_input(self, x: float):
        """x_t entering the bar from below at ``x``."""
        self.d.arrow((x, 372), (x, self.BAR_Y + 16), color=INPUT, width=2)
        self.d.label(x + 10, 366, "x_t", italic=True, anchor="start")


def lstm_cell() -> Drawing:
    """The LSTM cell: z_t split into the gates i, f, g, o (PyTorch's order); the cell path has only ⊙ f_t and +."""
    cell = _GatedCell("The LSTM cell", "c", CELL, keep_x=340, add_x=430)
    d, forget, add, c_y, bar_y = cell.d, cell.keep, cell.add, cell.PATH_Y, cell.BAR_Y
    d.label(515, c_y - 22, "∂c_t/∂c_{t-1} = diag(f_t)", size=SMALL, italic=True, color=CELL)
    # z_t and the four gates, in PyTorch's order
    _gate_bar(d, cell.BAR_LEFT, bar_y, [(90, "i"), (90, "f"), (90, "g"), (90, "o")])
    d.label(375, bar_y + 34, "z_t = W x_t + U h_{t-1} + b   (4H)", size=SMALL, italic=True, anchor="end")
    i, f, g, o = (cell.gate(x, name) for x, name in zip([250, 340, 430, 520], ["σ", "σ", "tanh", "σ"]))
    product = d.op(430, 140, "*")
    d.arrow(f.top, forget.bottom)
    d.arrow(g.top, product.bottom)
    d.arrow(i.top, (250, 140), product.left, halo=True)
    d.arrow(product.top, add.bottom)
    d.label(258, 178, "i_t", italic=True, anchor="start")
    d.label(348, 178, "f_t", italic=True, anchor="start")
    d.label(438, 178, "c̃_t", italic=True, anchor="start")
    # the hidden state, from the new cell
    squash = d.box(600, 122, 56, 30, "tanh", GATE)
    output = d.op(600, 185, "*")
    d.dot(600, c_y, CELL)
    d.arrow((600, c_y), squash.top, color=CELL)
    d.arrow(squash.bottom, output.top)
    d.arrow(o.top, (520, 185), output.left)
    d.label(548, 172, "o_t", italic=True)
    d.arrow(output.bottom, (600, 250), (732, 250), color=STATE, width=2)
    d.label(724, 232, "h_t", italic=True, anchor="end")
    # the inputs
    d.arrow((28, bar_y), (cell.BAR_LEFT, bar_y), color=STATE, width=2)
    d.label(36, bar_y - 18, "h_{t-1}", italic=True, anchor="start")
    cell.x_input(385)
    return d


def gru_cell() -> Drawing:
    """The GRU cell (PyTorch's form): update gate z_t, reset gate r_t inside the candidate n_t."""
    cell = _GatedCell("The GRU cell", "h", STATE, keep_x=250, add_x=470)
    d, keep, add, h_y, bar_y = cell.d, cell.keep, cell.add, cell.PATH_Y, cell.BAR_Y
    d.label(360, h_y - 22, "z_t ⊙ h_{t-1}: kept as it is", size=SMALL, color=MUTED)
    # what the gates read: h_{t-1} is both the carried state and an input
    d.dot(80, h_y, STATE)
    d.arrow((80, h_y), (80, bar_y), (cell.BAR_LEFT, bar_y), color=STATE, width=2)
    d.box(420, bar_y, 430, 32, "", INPUT, rx=2)
    d.label(360, bar_y, "W x_t + b_i,  U h_{t-1} + b_h", size=SMALL, italic=True)
    d.label(395, bar_y + 34, "r, z, n stacked: 3H each", size=SMALL, italic=False, anchor="end", color=MUTED)
    cell.x_input(400)
    # the update gate: keep h_{t-1}, or take the candidate
    update = cell.gate(250, "σ")
    d.arrow(update.top, keep.bottom)
    d.label(258, 178, "z_t", italic=True, anchor="start")
    d.dot(250, 140)
    complement = d.box(360, 140, 70, 30, "1 −", GATE)
    mix = d.op(470, 140, "*")
    d.arrow((250, 140), complement.left)
    d.arrow(complement.right, mix.left)
    d.arrow(mix.top, add.bottom)
    # the candidate, with the reset gate applied to U_n h_{t-1}
    candidate = cell.gate(470, "tanh")
    d.arrow(candidate.top, mix.bottom)
    d.label(478, 180, "n_t", italic=True, anchor="start")
    reset = cell.gate(590, "σ")
    d.arrow(reset.left, candidate.right)
    d.label(530, cell.GATE_Y - 14, "r_t", italic=True)
    return d


def _seq2seq(attention: bool) -> Drawing:
    d = Drawing(350, "An encoder-decoder " + ("with attention" if attention else "without attention"))
    enc_xs, dec_xs = [95, 185, 275], [445, 530, 615, 700]
    token_y, state_y, out_y = 292, 215, 45
    source, inputs, outputs = ["God", "is", "love"], ["<bos>", "Dieu", "est", "amour"], ["Dieu", "est", "amour",
                                                                                        "<eos>"]
    d.rect(50, state_y - 30, 270, 60, stroke=GRAY, dash="5 4", rx=10)
    encoder = []
    for j, (x, word) in enumerate(zip(enc_xs, source), 1):
        d.box(x, token_y, 66, 32, word, INPUT)
        encoder.append(d.box(x, state_y, 56, 40, f"e_{j}", STATE, italic=True))
        d.arrow((x, token_y - 16), (x, state_y + 20))
    for left, right in zip(encoder, encoder[1:]):
        d.arrow((left.right[0], state_y - 8), (right.left[0], state_y - 8), width=1.3)
        d.arrow((right.left[0], state_y + 8), (left.right[0], state_y + 8), width=1.3)
    start = d.box(365, state_y, 44, 40, "s_0", STATE, italic=True)
    d.arrow((320, state_y), start.left)
    d.label(365, state_y + 36, "2H numbers", size=SMALL, color=MUTED)
    previous = start
    for t, (x, word, target) in enumerate(zip(dec_xs, inputs, outputs), 1):
        d.box(x, token_y, 70, 32, word, INPUT)
        state = d.box(x, state_y, 56, 40, f"s_{t}", STATE, italic=True)
        d.arrow((x, token_y - 16), state.bottom)
        d.arrow(previous.right, state.left)
        previous = state
        out = d.box(x, out_y, 70, 32, target, OUTPUT)
        if attention:
            combine = d.box(x, 140, 56, 30, "tanh", GATE)
            d.arrow(state.top, combine.bottom)
            d.arrow(combine.top, out.bottom)
            if t > 1:
                d.arrow((x - 43, 140), combine.left, color=ATTENTION)
        else:
            d.arrow(state.top, out.bottom)
    d.label(185, 336, "encoder: a bidirectional LSTM", size=SMALL, color=MUTED)
    d.label(572, 336, "decoder: an LSTM, one step per word", size=SMALL, color=MUTED)
    if not attention:
        d.label(185, 120, "the decoder sees the source", size=SMALL, color=MUTED)
        d.label(185, 140, "only through s_0", size=SMALL, color=MUTED)
        return d
    # step 1 reads every encoder state, weighted
    weights = [0.85, 0.10, 0.05]
    d.label(18, 150, "α_{1j}", italic=True, anchor="start", size=SMALL, color=ATTENTION)
    context = d.box(185, 70, 56, 34, "c_1", ATTENTION, italic=True)
    for x, state, weight in zip(enc_xs, encoder, weights):
        cell = d.box(x, 150, 50, 26, f"{weight:.2f}", ATTENTION, fill=tint(ATTENTION, 1 - 0.75 * weight), size=SMALL)
        d.arrow(state.top, cell.bottom, color=ATTENTION, width=1.3)
        d.arrow(cell.top, (context.cx + (x - context.cx) * 0.3, context.bottom[1]), color=ATTENTION,
                width=1 + 3 * weight)
    d.arrow(context.right, (395, 70), (395, 140), (417, 140), color=ATTENTION)
    d.label(222, 40, "α_{1j} ∝ exp(s_1^T W_a e_j)", size=SMALL, italic=True, anchor="start", color=ATTENTION)
    return d


def seq2seq() -> Drawing:
    """The encoder-decoder without attention: the source reaches the decoder only through its initial state."""
    return _seq2seq(attention=False)


def seq2seq_attention() -> Drawing:
    """The encoder-decoder with attention: each decoder step weights every encoder state."""
    return _seq2seq(attention=True)



# --- chapter 4 ------------------------------------------------------------------------------------

QUERY, KEY, VALUE = ORANGE, PURPLE, BLUE


def attention_lookup() -> Drawing:
    """Attention as a soft look-up: one query scores every key; the softmax of the scores weights the values."""
    d = Drawing(350, "Attention as a soft look-up")
    words = ["a", "quick", "brown", "fox", "jumps"]
    scores = [-0.5, 0.9, 1.4, 0.6, -0.2]  # made up, for the picture
    total = sum(math.exp(score) for score in scores)
    weights = [math.exp(score) / total for score in scores]
    ys = [88 + 44 * i for i in range(5)]
    header_y = 40
    for x, text in ((55, "token j"), (155, "key k_j"), (270, "score"), (420, "weight p_j"), (550, "value v_j"),
                    (688, "output")):
        d.label(x, header_y, text, size=SMALL, color=MUTED)
    total_x, total_y = 640, ys[2]
    for y, word, score, weight, j in zip(ys, words, scores, weights, range(1, 6)):
        d.label(55, y, word, bold=word == "fox", color=QUERY if word == "fox" else INK)
        key = d.box(155, y, 52, 30, f"k_{j}", KEY, italic=True)
        d.label(270, y, f"{score:+.1f}".replace("-", "−"), size=SMALL)
        d.arrow(key.right, (240, y), width=1.2)
        d.rect(360, y - 9, 100 * weight / max(weights), 18, fill=tint(ATTENTION, 0.35), stroke=ATTENTION, rx=2,
               stroke_width=1)
        d.label(366 + 100 * weight / max(weights), y, f"{weight:.2f}", size=SMALL, anchor="start")
        d.arrow((300, y), (352, y), width=1.2)
        value = d.box(550, y, 52, 30, f"v_{j}", VALUE, italic=True)
        d.line([value.right, (total_x - 12, total_y + (y - total_y) * 0.25)], ATTENTION, 0.8 + 6 * weight)
    d.label(326, 64, "softmax", size=SMALL, color=MUTED)
    d.op(total_x, total_y, "+")
    out = d.box(700, total_y, 64, 34, "c_{fox}", OUTPUT, italic=True)
    d.arrow((total_x + 11, total_y), out.left)
    d.label(700, total_y + 34, "Σ_j p_j v_j", size=SMALL, italic=True)
    query = d.box(155, 318, 150, 32, "q = x_{fox} W_Q", QUERY, italic=True)
    d.arrow(query.right, (270, 318), (270, ys[-1] + 14))
    d.label(290, 288, "q · k_j / √d_k", size=SMALL, italic=True, anchor="start")
    return d


PADDED = [False, False, False, True, True, True]  # a sentence of three tokens, then three of padding


def attention_masks() -> Drawing:
    """Scaled dot-product attention, with the padding and causal masks added to the scores."""
    d = Drawing(480, "Scaled dot-product attention and its masks")
    x = 250
    value = d.box(75, 440, 104, 44, "V\n(…, S, d_v)", VALUE, size=SMALL)
    query = d.box(190, 440, 104, 44, "Q\n(…, L, d_k)", QUERY, size=SMALL)
    key = d.box(305, 440, 104, 44, "K\n(…, S, d_k)", KEY, size=SMALL)
    product = d.box(x, 365, 100, 34, "Q K^T", GATE, italic=True)
    d.arrow(query.top, (product.cx - 25, product.bottom[1]))
    d.arrow(key.top, (product.cx + 25, product.bottom[1]))
    scale = d.box(x, 300, 100, 34, "÷ √d_k", GATE)
    d.arrow(product.top, scale.bottom)
    add = d.op(x, 240)
    d.arrow(scale.top, add.bottom)
    softmax = d.box(x, 180, 150, 34, "softmax over S", GATE)
    d.arrow(add.top, softmax.bottom)
    mix = d.box(x, 115, 100, 34, "P V", GATE, italic=True)
    d.arrow(softmax.top, mix.bottom)
    out = d.box(x, 45, 170, 36, "output (…, L, d_v)", OUTPUT, size=SMALL)
    d.arrow(mix.top, out.bottom)
    d.arrow(value.top, (75, 115), mix.left)
    d.label(x + 10, 332, "(…, L, S)", size=SMALL, anchor="start", color=MUTED)
    d.label(x + 10, 147, "P: (…, L, S)", size=SMALL, anchor="start", color=MUTED)
    # the two masks, 0 where a key is read and −∞ where it is hidden
    cell = 17
    top = 240 - 3 * cell
    pad = d.grid(432, top, 6, 6, cell, lambda r, c: tint(HIDDEN, 0.3) if PADDED[c] else PANEL)
    d.label(590, 240, "+", size=20)
    causal = d.grid(620, top, 6, 6, cell, lambda r, c: tint(HIDDEN, 0.3) if c > r else PANEL)
    d.label(pad.cx, top - 38, "padding", size=SMALL)
    d.label(pad.cx, top - 18, "(B, 1, 1, S)", size=SMALL, color=MUTED)
    d.label(causal.cx, top - 38, "causal", size=SMALL)
    d.label(causal.cx, top - 18, "(T, T)", size=SMALL, color=MUTED)
    d.arrow((pad.left[0] - 8, 240), add.right)
    d.label(350, 226, "M", italic=True)
    legend_y = top + 6 * cell + 32
    d.rect(432, legend_y - 8, 16, 16, fill=PANEL, stroke=MUTED, rx=0, stroke_width=0.8)
    d.label(456, legend_y, "0: the key is read", size=SMALL, anchor="start")
    d.rect(432, legend_y + 18, 16, 16, fill=tint(HIDDEN, 0.3), stroke=MUTED, rx=0, stroke_width=0.8)
    d.label(456, legend_y + 26, "−∞: hidden, probability 0", size=SMALL, anchor="start")
    d.label(432, legend_y + 56, "rows: queries; columns: keys", size=SMALL, anchor="start", color=MUTED)
    d.label(432, legend_y + 78, "padding: 3 tokens, then 3 pads", size=SMALL, anchor="start", color=MUTED)
    return d


def _tensor(d: Drawing, x, y, heads=True, gap=0.0, cell=10.0, T=5, E=12, H=3):
    """A (T, E) matrix of features, coloured by the head each feature belongs to (grey: no head)."""
    return d.grid(x, y, T, E, cell, (lambda r, c: tint(HEADS[c // (E // H)], 0.55)) if heads else
                  (lambda r, c: tint(GRAY, 0.75)), gap_every=E // H if gap else None, gap=gap)


def _deck(d: Drawing, x, y, cell=10.0, T=5, D=4, H=3):
    """H matrices (T, D), one per head, stacked: the heads as a batch axis."""
    for h in reversed(range(H)):
        d.grid(x + 10 * h, y + 10 * h, T, D, cell, lambda r, c, h=h: tint(HEADS[h], 0.55))
    return Box(x + (D * cell + 10 * (H - 1)) / 2, y + (T * cell + 10 * (H - 1)) / 2, D * cell + 10 * (H - 1),
               T * cell + 10 * (H - 1))


def multi_head_attention() -> Drawing:
    """Multi-head attention, shape by shape: split the features into heads, attend per head, merge back."""
    d = Drawing(440, "Multi-head attention with its shapes")
    left, right = 180, 580
    levels = [50, 145, 240]

    def shape(x, y, text, anchor):
        d.label(x, y, text, size=SMALL, anchor=anchor, color=MUTED)

    def step(x, y0, y1, text, anchor):
        d.arrow((x, y0), (x, y1))
        d.label(x + (10 if anchor == "start" else -10), (y0 + y1) / 2, text, size=SMALL, anchor=anchor)

    # split (left, downwards)
    a = _tensor(d, left - 60, levels[0] - 25, heads=False)
    shape(a.left[0] - 10, a.cy, "x (B, T, E)", "end")
    b = _tensor(d, left - 60, levels[1] - 25)
    shape(b.left[0] - 10, b.cy, "q (B, T, E)", "end")
    c = _tensor(d, left - 66, levels[2] - 25, gap=6)
    shape(c.left[0] - 10, c.cy, "(B, T, H, D)", "end")
    deck = _deck(d, left - 30, 320)
    shape(deck.left[0] - 10, deck.cy, "(B, H, T, D)", "end")
    step(left, a.bottom[1] + 4, b.top[1] - 4, "q\\_proj (k\\_proj, v\\_proj alike)", "start")
    step(left, b.bottom[1] + 4, c.top[1] - 4, "view(B, T, H, D)", "start")
    step(left, c.bottom[1] + 4, deck.top[1] - 4, "transpose(1, 2)", "start")
    # merge (right, upwards)
    out = _tensor(d, right - 60, levels[0] - 25, heads=False)
    shape(out.right[0] + 10, out.cy, "(B, T, E)", "start")
    merged = _tensor(d, right - 60, levels[1] - 25)
    shape(merged.right[0] + 10, merged.cy, "(B, T, E)", "start")
    split = _tensor(d, right - 66, levels[2] - 25, gap=6)
    shape(split.right[0] + 10, split.cy, "(B, T, H, D)", "start")
    back = _deck(d, right - 30, 320)
    shape(back.right[0] + 10, back.cy, "(B, H, T, D)", "start")
    step(right, back.top[1] - 4, split.bottom[1] + 4, "transpose(1, 2)", "end")
    step(right, split.top[1] - 4, merged.bottom[1] + 4, ".contiguous().view(B, T, E)", "end")
    step(right, merged.top[1] - 4, out.bottom[1] + 4, "out\\_proj (W_O)", "end")
    # attention on every head at once
    attend = d.box(380, 355, 210, 56, "softmax(q k^T/√D) v\nscores (B, H, T, T)", ATTENTION, size=SMALL)
    d.arrow((deck.right[0] + 6, 355), attend.left)
    d.arrow(attend.right, (back.left[0] - 6, 355))
    for h, name in enumerate(["head 0", "head 1", "head 2"]):
        d.rect(290 + 76 * h, 412, 14, 14, fill=tint(HEADS[h], 0.55), stroke=MUTED, rx=0, stroke_width=0.8)
        d.label(309 + 76 * h, 419, name, size=SMALL, anchor="start")
    return d



# --- chapter 5 ------------------------------------------------------------------------------------

def _sublayer_stack(d: Drawing, cx, items, bottom=455, step=47):
    """A residual stack flowing up from ``bottom``: ``items`` are ("branch",), ("add",) or (label, colour);
    each "add" takes the residual from the "branch" before it, on the left. Returns the y of each item."""
    ys = [bottom - step * i for i in range(len(items))]
    previous, branch_y = (cx, bottom + 40), None
    for (kind, *rest), y in zip(items, ys):
        if kind == "branch":
            d.line([previous, (cx, y)])
            d.dot(cx, y)
            previous, branch_y = (cx, y), y
        elif kind == "add":
            node = d.op(cx, y)
            d.arrow(previous, node.bottom)
            d.arrow((cx, branch_y), (cx - 118, branch_y), (cx - 118, y), node.left)
            previous = node.top
        else:
            box = d.box(cx, y, 190, 32, kind, rest[0])
            d.arrow(previous, box.bottom)
            previous = box.top
    d.arrow(previous, (cx, ys[-1] - 40))
    return ys


def transformer_block() -> Drawing:
    """The Transformer layer with the LayerNorm after each residual sum (post-LN) and before each sublayer (pre-LN)."""
    d = Drawing(580, "The Transformer block, post-LN and pre-LN")
    attention, ffn, norm = ("multi-head attention", ATTENTION), ("feed-forward", FFN), ("LayerNorm", NORM)
    layouts = {
        "post-LN": (200, [("branch",), attention, ("add",), norm, ("branch",), ffn, ("add",), norm],
                    "LN(x + F(x))", "the paper; BERT"),
        "pre-LN": (570, [("branch",), norm, attention, ("add",), ("branch",), norm, ffn, ("add",)],
                   "x + F(LN(x))", "GPT-2; chapter 5's LM and translator"),
    }
    d.line([(385, 24), (385, 556)], GRAY, 1, dash="4 4")
    for name, (cx, items, rule, who) in layouts.items():
        ys = _sublayer_stack(d, cx, items, bottom=470)
        d.label(cx, 28, f"{name}:  x ← {rule}", bold=True)
        d.label(cx, 52, who, size=SMALL, color=MUTED)
        d.label(cx + 10, 92, "(B, T, D)", size=SMALL, anchor="start", color=MUTED)
        d.label(cx + 10, 536, "x  (B, T, D)", size=SMALL, anchor="start", color=MUTED)
        top, bottom = ys[-1] - 14, ys[0] + 10
        d.line([(cx + 104, bottom), (cx + 112, bottom), (cx + 112, top), (cx + 104, top)], MUTED, 1.2)
        d.label(cx + 120, (top + bottom) / 2, "× N", anchor="start")
    d.label(570, 558, "after the last layer: one more LayerNorm", size=SMALL, color=MUTED)
    return d


def _causal_grid(d: Drawing, x, y, chars, cell=30):
    """The causal mask over ``chars``: 0 on and below the diagonal, −∞ above it, with its axes labelled."""
    n = len(chars)
    grid = d.grid(x, y, n, n, cell, lambda r, c: tint(HIDDEN, 0.3) if c > r else PANEL)
    for i, char in enumerate(chars):
        d.label(x - 10, y + cell * (i + 0.5), char, size=SMALL, anchor="end")
        d.label(x + cell * (i + 0.5), y - 12, char, size=SMALL)
        for j in range(n):
            d.label(x + cell * (j + 0.5), y + cell * (i + 0.5), "−∞" if j > i else "0", size=13,
                    color=INK if j > i else MUTED)
    return grid


def decoder_only_lm() -> Drawing:
    """The decoder-only language model: every position predicts the next character, reading only those before it."""
    d = Drawing(480, "A decoder-only language model")
    chars = ["I", "n", "␣", "t", "h", "e"]
    targets = ["n", "␣", "t", "h", "e", "␣"]
    xs = [130 + 50 * i for i in range(6)]
    cx, width = 255, 310
    levels = {"in": 440, "embed": 370, "layers": 282, "norm": 200, "linear": 140, "out": 60}
    for x, char, target in zip(xs, chars, targets):
        d.box(x, levels["in"], 38, 32, char, INPUT)
        d.box(x, levels["out"], 38, 32, target, OUTPUT)
    d.box(cx, levels["embed"], width, 34, "token + position embeddings", INPUT)
    layers = d.box(cx, levels["layers"], width, 64, "N × pre-LN layer:\ncausal self-attention, FFN", ATTENTION)
    d.box(cx, levels["norm"], width, 34, "final LayerNorm", NORM)
    d.box(cx, levels["linear"], width, 34, "linear map to the V characters", GATE)
    for x in xs:
        for low, high, low_h, high_h in (("in", "embed", 32, 34), ("embed", "layers", 34, 64),
                                         ("layers", "norm", 64, 34), ("norm", "linear", 34, 34),
                                         ("linear", "out", 34, 32)):
            d.arrow((x, levels[low] - low_h / 2), (x, levels[high] + high_h / 2), width=1.3)
    for label, y in (("(B, T)", levels["in"]), ("(B, T, D)", 326), ("(B, T, V)", 100)):
        d.label(92, y, label, size=SMALL, anchor="end", color=MUTED)
    d.label(92, levels["out"], "next", size=SMALL, anchor="end", color=MUTED)
    # the mask every layer adds to its scores
    grid = _causal_grid(d, 545, 160, chars)
    d.label(grid.cx, 100, "causal mask (T, T)", bold=True)
    d.label(grid.cx, 122, "rows: queries; columns: keys", size=SMALL, color=MUTED)
    d.label(grid.cx, grid.bottom[1] + 24, "query t reads keys ≤ t", size=SMALL)
    d.arrow((490, levels["layers"]), layers.right, color=HIDDEN)
    d.label(450, levels["layers"] - 14, "M", italic=True, color=HIDDEN)
    return d


def transformer_translator() -> Drawing:
    """The encoder-decoder Transformer: the encoder's memory is read by cross-attention in every decoder layer."""
    d = Drawing(600, "The encoder-decoder Transformer")
    enc, dec = 190, 565
    width = 250

    def column(cx, words, sublayers, top_box):
        for i, word in enumerate(words):
            x = cx + (i - (len(words) - 1) / 2) * 66
            d.box(x, 548, 60, 30, word, INPUT)
            d.arrow((x, 533), (x, 505))
        embed = d.box(cx, 488, width, 34, "embedding · √D + positions", INPUT)
        y, previous = 420, embed.top
        top = y + 32
        boxes = []
        for label, color in sublayers:
            box = d.box(cx, y, width - 40, 44, label, color, size=SMALL)
            d.arrow(previous, box.bottom)
            previous, y = box.top, y - 70
            boxes.append(box)
        d.rect(cx - width / 2, boxes[-1].top[1] - 12, width, top - boxes[-1].top[1] + 12, stroke=GRAY, dash="5 4",
               rx=10)
        d.label(cx + width / 2 + 8, (boxes[-1].top[1] + top) / 2, "× N", anchor="start")
        norm = d.box(cx, y + 8, width, 32, top_box, NORM)
        d.arrow(previous, norm.bottom)
        return boxes, norm

    _, memory = column(enc, ["God", "is", "love"],
                       [("self-attention\n(padding mask)", ATTENTION), ("feed-forward", FFN)], "final LayerNorm")
    boxes, norm = column(dec, ["<bos>", "Dieu", "est", "amour"],
                         [("causal self-attention", ATTENTION), ("cross-attention\nqueries: decoder", ATTENTION),
                          ("feed-forward", FFN)], "final LayerNorm")
    cross = boxes[1]
    d.arrow(memory.top, (enc, 150), (400, 150), (400, cross.cy), cross.left, color=ATTENTION, width=2)
    d.label(enc, 84, "memory m (B, S, D): the keys", size=SMALL, color=ATTENTION)
    d.label(enc, 104, "and values of the cross-attention", size=SMALL, color=ATTENTION)
    d.label(enc, 124, "in every decoder layer", size=SMALL, color=ATTENTION)
    linear = d.box(dec, 122, width, 32, "linear map to the vocabulary", GATE)
    d.arrow(norm.top, linear.bottom)
    for i, word in enumerate(["Dieu", "est", "amour", "<eos>"]):
        x = dec + (i - 1.5) * 66
        d.box(x, 40, 60, 30, word, OUTPUT)
        d.arrow((x, 106), (x, 56))
    d.label(enc, 584, "encoder: source (B, S)", size=SMALL, color=MUTED)
    d.label(dec, 584, "decoder: target prefix (B, T)", size=SMALL, color=MUTED)
    return d


# --- chapter 6 ------------------------------------------------------------------------------------

SEGMENT_A, SEGMENT_B = ORANGE, GREEN
PAIR = ["[CLS]", "my", "dog", "is", "cute", "[SEP]", "he", "likes", "play", "##ing", "[SEP]"]


def bert_input() -> Drawing:
    """BERT's input: the sum of a token, a segment and a position embedding at every position."""
    d = Drawing(300, "BERT's input embeddings")
    xs = [190 + 53 * i for i in range(len(PAIR))]
    rows = {"input": 40, "token": 92, "segment": 150, "position": 208}
    d.label(18, rows["input"], "input", anchor="start", color=MUTED, size=SMALL)
    d.label(18, rows["token"], "token\nW_{tok}[x_t]", anchor="start", size=SMALL)
    d.label(18, rows["segment"], "+ segment\nW_{seg}[s_t]", anchor="start", size=SMALL)
    d.label(18, rows["position"], "+ position\nW_{pos}[t]", anchor="start", size=SMALL)
    for t, (x, token) in enumerate(zip(xs, PAIR)):
        segment = "A" if t <= PAIR.index("[SEP]") else "B"
        d.label(x, rows["input"], token, size=SMALL, bold=token.startswith("["))
        d.box(x, rows["token"], 50, 38, f"E_{{{token}}}", INPUT, size=SMALL, italic=True)
        d.box(x, rows["segment"], 50, 38, f"E_{segment}", SEGMENT_A if segment == "A" else SEGMENT_B, size=SMALL,
              italic=True)
        d.box(x, rows["position"], 50, 38, f"E_{{{t}}}", GRAY, size=SMALL, italic=True)
        d.label(x, (rows["token"] + rows["segment"]) / 2, "+", size=SMALL, color=MUTED)
        d.label(x, (rows["segment"] + rows["position"]) / 2, "+", size=SMALL, color=MUTED)
    d.arrow((xs[5], 230), (xs[5], 252))
    d.label(xs[5], 272, "LayerNorm, dropout:  E  (B, T, D), to the first layer", size=SMALL)
    return d


def bert_masked_lm() -> Drawing:
    """BERT's masked language model: 15% of the tokens are picked and corrupted; the loss is at those only."""
    d = Drawing(470, "BERT's masked language model")
    text = ["[CLS]", "and", "god", "said", "let", "there", "be", "light", "[SEP]"]
    corrupted = {3: ("[MASK]", HIDDEN), 5: ("lamb", ORANGE), 7: ("light", OLIVE)}
    xs = [150 + 68 * i for i in range(len(text))]
    rows = {"labels": 45, "heads": 120, "encoder": 210, "input": 300, "text": 380}
    d.label(18, rows["labels"], "labels", anchor="start", size=SMALL, color=MUTED)
    d.label(18, rows["input"], "input x̃", anchor="start", size=SMALL, color=MUTED)
    d.label(18, rows["text"], "text x", anchor="start", size=SMALL, color=MUTED)
    encoder = d.box((xs[0] + xs[-1]) / 2, rows["encoder"], xs[-1] - xs[0] + 64, 50,
                    "BERT encoder: every position reads every other", ATTENTION)
    for i, (x, token) in enumerate(zip(xs, text)):
        d.box(x, rows["text"], 62, 32, token, INPUT, size=SMALL)
        shown, color = corrupted.get(i, (token, INPUT))
        d.box(x, rows["input"], 62, 32, shown, color, size=SMALL)
        d.arrow((x, rows["text"] - 16), (x, rows["input"] + 16), width=1.2)
        d.arrow((x, rows["input"] - 16), (x, encoder.bottom[1]), width=1.2)
        if i in corrupted:
            head = d.box(x, rows["heads"], 62, 30, "head", GATE, size=SMALL)
            d.arrow((x, encoder.top[1]), head.bottom, width=1.2)
            d.box(x, rows["labels"], 62, 32, token, OUTPUT, size=SMALL)
            d.arrow(head.top, (x, rows["labels"] + 16), width=1.2)
        else:
            d.label(x, rows["labels"], "−100", size=13, color=MUTED)
    d.label(18, rows["heads"] - 8, "MLM head:", anchor="start", size=SMALL, color=MUTED)
    d.label(18, rows["heads"] + 10, "softmax over V", anchor="start", size=SMALL, color=MUTED)
    legend_y = 430
    d.label(18, legend_y, "picked (15%):", anchor="start", size=SMALL)
    for i, (name, color) in enumerate((("80% [MASK]", HIDDEN), ("10% a random token", ORANGE),
                                       ("10% kept as it is", OLIVE))):
        x = 140 + 200 * i
        d.rect(x, legend_y - 8, 16, 16, fill=tint(color), stroke=color, rx=3)
        d.label(x + 24, legend_y, name, anchor="start", size=SMALL)
    d.label(18, 456, "−100: not picked, no loss (F.cross\\_entropy skips it)", anchor="start", size=SMALL,
            color=MUTED)
    return d


def bert_next_sentence() -> Drawing:
    """BERT's next-sentence prediction: the pooled [CLS] vector classifies whether B follows A."""
    d = Drawing(400, "BERT's next-sentence prediction")
    pair = ["[CLS]", "in", "the", "beginning", "[SEP]", "was", "the", "word", "[SEP]"]
    widths = [62, 50, 50, 92, 62, 50, 50, 56, 62]
    xs, x = [], 40
    for w in widths:
        xs.append(x + w / 2)
        x += w + 8
    token_y, encoder_y = 340, 262
    for i, (x, w, token) in enumerate(zip(xs, widths, pair)):
        segment = SEGMENT_A if i <= 4 else SEGMENT_B
        d.box(x, token_y, w, 32, token, segment, size=SMALL)
        d.arrow((x, token_y - 16), (x, encoder_y + 25), width=1.2)
    d.label((xs[0] + xs[4]) / 2, 378, "span A: segment A", size=SMALL, color=MUTED)
    d.label((xs[5] + xs[8]) / 2, 378, "span B: segment B", size=SMALL, color=MUTED)
    encoder = d.box((xs[0] + xs[-1]) / 2, encoder_y, xs[-1] - xs[0] + 64, 50,
                    "BERT encoder (masked-LM loss on the same input)", ATTENTION, size=SMALL)
    pooler = d.box(xs[0] + 60, 185, 180, 34, "pooler: tanh(W_p h + b_p)", GATE, size=SMALL)
    d.arrow((xs[0], encoder.top[1]), (xs[0], pooler.bottom[1]))
    d.label(xs[0] - 8, 213, "h_{[CLS]}", size=SMALL, italic=True, anchor="end")
    scores = d.box(xs[0] + 60, 118, 180, 34, "linear: 2 scores", GATE, size=SMALL)
    d.arrow(pooler.top, scores.bottom)
    answer = d.box(xs[0] + 60, 50, 180, 34, "IsNext / NotNext", OUTPUT)
    d.arrow(scores.top, answer.bottom)
    d.label(330, 70, "half the time B is the span that follows A:", size=SMALL, anchor="start")
    d.label(330, 92, "IsNext (as here)", size=SMALL, anchor="start", bold=True)
    d.label(330, 130, "half the time a span drawn at random:", size=SMALL, anchor="start")
    d.label(330, 152, "NotNext", size=SMALL, anchor="start", bold=True)
    return d


DIAGRAMS = {
    "01-word-vectors/diagrams/skipgram-cbow.svg": skipgram_cbow,
    "01-word-vectors/diagrams/fasttext-units.svg": fasttext_units,
    "02-rnns/diagrams/rnn-unrolled.svg": rnn_unrolled,
    "02-rnns/diagrams/bptt.svg": bptt,
    "02-rnns/diagrams/bidirectional-rnn.svg": bidirectional_rnn,
    "02-rnns/diagrams/stacked-rnn.svg": stacked_rnn,
    "02-rnns/diagrams/ngram-window.svg": ngram_window,
    "03-lstms/diagrams/lstm-cell.svg": lstm_cell,
    "03-lstms/diagrams/gru-cell.svg": gru_cell,
    "03-lstms/diagrams/seq2seq.svg": seq2seq,
    "03-lstms/diagrams/seq2seq-attention.svg": seq2seq_attention,
    "04-attention/diagrams/attention-lookup.svg": attention_lookup,
    "04-attention/diagrams/attention-masks.svg": attention_masks,
    "04-attention/diagrams/multi-head-attention.svg": multi_head_attention,
    "05-transformers/diagrams/transformer-block.svg": transformer_block,
    "05-transformers/diagrams/decoder-only-lm.svg": decoder_only_lm,
    "05-transformers/diagrams/transformer-translator.svg": transformer_translator,
    "06-bert/diagrams/bert-input.svg": bert_input,
    "06-bert/diagrams/bert-masked-lm.svg": bert_masked_lm,
    "06-bert/diagrams/bert-next-sentence.svg": bert_next_sentence,
}


def write_all(root: Path = REPO / "book") -> list[Path]:
    """Draw every diagram into ``root`` (the book's folder by default); return the files written."""
    written = []
    for name, draw in DIAGRAMS.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(draw().svg(), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "book"
    for path in write_all(root):
        print(path)
