"""Draw a Volt run's learning curve from the JSON the report writes (src/report/curve-data.ts).

    .venv/bin/python scripts/plot_curve.py curve.json curve.png

Plots only; every number comes ready-made from the TypeScript side.
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")  # no display on workers or CI
import matplotlib.pyplot as plt  # noqa: E402

DEFAULT_LABELS = {
    "reward": "mean training reward",
    "eval": "held-out eval score",
    "base": "base model (held-out)",
    "x": "updates applied (iteration)",
}


def plot(data: dict, out: str) -> None:
    # Optional "labels" let other run kinds (prompt optimisation) name their series.
    labels = {**DEFAULT_LABELS, **data.get("labels", {})}
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    if data["iterations"]:
        ax.plot(data["iterations"], data["meanReward"], marker="o", label=labels["reward"])
    if data["evalIterations"]:
        ax.plot(data["evalIterations"], data["evalScores"], marker="s", label=labels["eval"])
    if data["baseScore"] is not None:
        ax.axhline(data["baseScore"], linestyle="--", color="gray", label=labels["base"])
    ax.set_xlabel(labels["x"])
    ax.set_ylabel("reward / score")
    ax.set_title(data["title"])
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best")
    else:
        ax.text(0.5, 0.5, "no iteration finished yet", ha="center", va="center", transform=ax.transAxes)
    fig.tight_layout()
    fig.savefig(out, format="png")
    plt.close(fig)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: plot_curve.py CURVE_JSON OUT_PNG")
    with open(sys.argv[1], encoding="utf-8") as f:
        plot(json.load(f), sys.argv[2])
