"""Charts for a paper: a figure's caption (the filters) under its title, and the toolbar that downloads it as
PNG or SVG with Plotly's own toImage (in the browser: offline, no kaleido)."""

from __future__ import annotations

import html
import textwrap
from typing import Any

import plotly.graph_objects as go

from services import inert

IMAGE_FORMATS = ("png", "svg")
CAPTION_CHARS = 95  # characters per line of a figure's caption (a half-width chart on a laptop)
CAPTION_LINES = 3


def captioned(fig: go.Figure, caption: str) -> go.Figure:
    """The figure with `caption` as its title's subtitle (grey, small, wrapped), so a downloaded image says
    what it counts; unchanged without a caption."""
    if not caption:
        return fig
    lines = textwrap.wrap(html.unescape(inert.plotly_text(caption)), CAPTION_CHARS, max_lines=CAPTION_LINES,
                          placeholder=" …")
    top = int(fig.layout.margin.t or 44) + 14 * len(lines) + 6
    fig.update_layout(title={"subtitle": {"text": "<br>".join(inert.plotly_text(line) for line in lines),
                                          "font": {"size": 10, "color": "#5B6573"}}},
                      margin={"t": top},
                      height=int(fig.layout.height or 300) + top - int(fig.layout.margin.t or 44))
    return fig


def image_config(name: str, fmt: str = "png") -> dict[str, Any]:
    """Plotly's config for a chart whose only toolbar button downloads it as an image (Plotly's own toImage,
    in the browser: no server or network), as PNG at twice the size on screen or as SVG, named `name`."""
    fmt = fmt if fmt in IMAGE_FORMATS else "png"
    return {"displayModeBar": True, "displaylogo": False, "modeBarButtons": [["toImage"]],
            "toImageButtonOptions": {"format": fmt, "filename": name, "scale": 2 if fmt == "png" else 1}}
