"""Small bar charts as data for an inline SVG the template draws.

Owns: the geometry of the per-action chart of the Overview (completed and
failed per minute over the last hour, stacked).  It returns numbers and
colours only; templates/overview.html writes the <svg> with presentation
attributes (the Content-Security-Policy allows no style attributes), so
nothing here is markup and Jinja escapes whatever it prints.
"""

from datetime import datetime, timezone

COMPLETED_FILL = "#1e7a34"
FAILED_FILL = "#b3261e"
UNSEEN_FILL = "#eef0f4"


def minute_bars(completed, failed, first_seen, end_minute, *, bar=3, gap=1, height=32):
    """completed and failed: counts per minute, oldest first, of the minutes
    ending with end_minute (minutes since the epoch); minutes before index
    first_seen were not sampled (drawn as a grey band, no bars)."""
    n = len(completed)
    top = max([c + f for c, f in zip(completed, failed)] + [1])
    step = bar + gap
    bars = []
    for i, (c, f) in enumerate(zip(completed, failed)):
        if i < first_seen or (c == 0 and f == 0):
            continue
        minute = datetime.fromtimestamp((end_minute - n + 1 + i) * 60, timezone.utc)
        hc = round(height * c / top, 1)
        hf = round(height * f / top, 1)
        bars.append({"x": i * step, "completed": c, "failed": f,
                     "yc": round(height - hc, 1), "hc": hc,
                     "yf": round(height - hc - hf, 1), "hf": hf,
                     "title": f"{minute:%H:%M} UTC: {c} completed, {f} failed"})
    return {"width": n * step, "height": height, "bar": bar, "bars": bars, "top": top,
            "unseen": first_seen * step, "completed_fill": COMPLETED_FILL,
            "failed_fill": FAILED_FILL, "unseen_fill": UNSEEN_FILL}
