"""chord against its peers (bench/bench_w4a16.py --peers): a chart and a Markdown table.

    python3 bench/peers_chart.py BENCH_JSON OUT_PNG     # the chart (bench.json of a --peers run)
    python3 bench/peers_chart.py BENCH_JSON --markdown  # the table, for the docs

Rows kept: those where at least one peer was timed (`<peer>_us` set). The chart has one bar
group per row ("scenario x proj"), one bar per peer that ran and checked ok: chord's time / the
peer's time, so below 1 chord is faster; a line at 1.0 and a dashed one at 0.9 (the decode target
against Marlin). A peer whose check failed is a marker with the word 'wrong' (at its ratio); a
peer that did not run on the row leaves its slot empty. The bench writes DIR/peers.png through
draw() whenever --peers ran and some peer was timed. No torch here: tests/python/test_peers_cpu.py
runs it on any machine.
"""
import json
import sys

PEER_ORDER = ("marlin", "humming")  # known peers first, in this order; others after, as found


def peer_names(rows):
    """The peers the rows carry (a `<name>_check` and a `<name>_us` field), known ones first."""
    found = []
    for row in rows:
        for key in row:
            if key.endswith("_check") and key not in ("check", "against_check"):
                name = key[: -len("_check")]
                if f"{name}_us" in row and name not in found:
                    found.append(name)
    return [n for n in PEER_ORDER if n in found] + [n for n in found if n not in PEER_ORDER]


def timed_rows(rows):
    """The rows where at least one peer was timed."""
    names = peer_names(rows)
    return [r for r in rows if any(r.get(f"{n}_us") is not None for n in names)]


def label(row):
    return f"{row['scenario']} {row['x']} {row['proj']}"


def status(row, name):
    """(state, chord time / peer time or None): state 'ok', 'wrong' (timed, check failed) or
    'not run' (no time: the peer does not serve the row)."""
    peer_us = row.get(f"{name}_us")
    if peer_us is None:
        return "not run", None
    ratio = row["chord_us"] / peer_us if peer_us > 0 else None
    return ("ok" if row.get(f"{name}_check") == "ok" else "wrong"), ratio


def best_peer(row, names):
    """(name, time) of the fastest peer that ran and checked ok on the row, or None."""
    ok = [(row[f"{n}_us"], n) for n in names if status(row, n)[0] == "ok"]
    if not ok:
        return None
    us, name = min(ok)
    return name, us


def table(rows):
    """A Markdown table of the timed rows: row, chord us, each peer's us ('(wrong)' after a
    failed check, 'not run' where it did not run) and chord / the fastest peer that checked ok
    (below 1: chord is faster), naming that peer."""
    names = peer_names(rows)
    head = ["row", "chord us"] + [f"{n} us" for n in names] + ["chord/best peer"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    for row in timed_rows(rows):
        cells = [label(row), f"{row['chord_us']:.1f}"]
        for n in names:
            state, _ = status(row, n)
            if state == "not run":
                cells.append("not run")
            else:
                cells.append(f"{row[f'{n}_us']:.1f}" + (" (wrong)" if state == "wrong" else ""))
        best = best_peer(row, names)
        cells.append(f"{row['chord_us'] / best[1]:.2f} ({best[0]})" if best else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def draw(rows, path, meta=None):
    """The chart of the timed rows to `path` (PNG); meta (bench.json's) names the GPU and the
    commit in the title. Returns the number of rows drawn (0: nothing written)."""
    sel = timed_rows(rows)
    if not sel:
        return 0
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = peer_names(sel)
    colors = {"marlin": "tab:red", "humming": "tab:green"}
    palette = iter(["tab:purple", "tab:brown", "tab:olive", "tab:cyan"])
    bar = 0.8 / max(len(names), 1)
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.22 * len(sel) * max(len(names), 1)))
    highest = 1.1
    wrong_labelled = False
    for j, name in enumerate(names):
        color = colors.get(name) or next(palette, "tab:gray")
        ys, widths, wrong = [], [], []
        for i, row in enumerate(sel):
            y = i + (j - (len(names) - 1) / 2) * bar
            state, ratio = status(row, name)
            if state == "ok" and ratio is not None:
                ys.append(y)
                widths.append(ratio)
                highest = max(highest, ratio)
            elif state == "wrong":
                wrong.append((y, ratio if ratio is not None else 1.0))
        ax.barh(ys, widths, height=bar * 0.9, color=color, label=f"chord / {name}")
        for y, ratio in wrong:
            highest = max(highest, ratio)
            ax.plot([ratio], [y], marker="X", color=color, markersize=8, linestyle="none",
                    label=None if wrong_labelled else "check failed")
            wrong_labelled = True
            ax.annotate("wrong", (ratio, y), xytext=(6, 0), textcoords="offset points", va="center",
                        fontsize=7, color=color)
    ax.axvline(1.0, color="black", linewidth=1)
    ax.axvline(0.9, color="black", linewidth=1, linestyle="--", label="0.9: decode target vs Marlin")
    ax.set_yticks(range(len(sel)))
    ax.set_yticklabels([label(r) for r in sel], fontsize=7)
    ax.invert_yaxis()  # the bench's row order, top to bottom
    ax.set_xlim(0, highest * 1.12)
    ax.set_xlabel("chord time / peer time (below 1: chord is faster)")
    meta = meta or {}
    ax.set_title(f"chord vs peers on {meta.get('gpu', 'unknown GPU')}, commit {meta.get('commit', 'unknown')}",
                 fontsize=10)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return len(sel)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip() + "\n" + __doc__.strip().splitlines()[3].strip(),
              file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        data = json.load(f)
    rows, meta = data.get("rows", []), data.get("meta", {})
    if argv[1] == "--markdown":
        print(table(rows))
        return 0
    try:
        drawn = draw(rows, argv[1], meta)
    except ImportError as e:
        print(f"no chart: {e} (the chart needs matplotlib; --markdown does not)", file=sys.stderr)
        return 1
    if not drawn:
        print(f"{argv[0]}: no row has a peer timed; nothing drawn", file=sys.stderr)
        return 1
    print(f"{drawn} rows -> {argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
