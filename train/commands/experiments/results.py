"""An experiment's output folder: the table as markdown (also printed), the numbers as JSON, the figure as PNG."""
import json
import math
from pathlib import Path


def pyplot():
    """matplotlib.pyplot drawing to files only (works without a display)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def cell(value, digits=2):
    """A table cell: floats with `digits` decimals (two significant digits when smaller), integers with thousands
    separators, None as a dash."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return f"{value:,.{digits}f}" if value == 0 or abs(value) >= 10 ** -digits else f"{value:.2g}"
    return str(value)


def markdown_table(headers, rows, digits=2):
    """A GitHub markdown table: headers (list of str), rows (lists of values, formatted by `cell`)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(v, digits) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def finite_or_none(obj):
    """obj with non-finite floats replaced by None (JSON has no NaN or infinity)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_or_none(v) for v in obj]
    return obj


def write(out, name, markdown, data):
    """Write out/name.md and out/name.json, print the markdown; returns the two paths."""
    out = Path(out)
    md, js = out / f"{name}.md", out / f"{name}.json"
    md.write_text(markdown, encoding="utf-8")
    js.write_text(json.dumps(finite_or_none(data), indent=1) + "\n", encoding="utf-8")
    print("\n" + markdown)
    return md, js


def save_figure(fig, path):
    """Save a matplotlib figure as PNG (small: 100 dpi) and close it; returns the path."""
    plt = pyplot()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"wrote {path}")
    return path
