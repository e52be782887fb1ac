"""chord against its peers (bench/bench_w4a16.py --peers): a chart, a Markdown table and a summary.

    python3 bench/peers_chart.py BENCH_JSON OUT_PNG     # the chart (bench.json or generalization.json)
    python3 bench/peers_chart.py BENCH_JSON --markdown  # the table, for the docs
    python3 bench/peers_chart.py BENCH_JSON --summary   # ratios per peer, rows over its bar

Rows kept: those where at least one peer ran (`<peer>_us` set, or `<peer>_check` an ERROR: it
raised). The chart has one bar group per row ("scenario x proj"), one bar per peer that ran and
checked ok: chord's time / the peer's time, so below 1 chord is faster; a line at 1.0 and a dashed
one at 0.9 (the decode target against Marlin). A peer whose check failed is a marker with the word
'wrong' (at its ratio), one that raised a marker 'error' at 0; a peer that did not run on the row
leaves its slot empty. Long row lists (the generalization set's 420 indexed rows) get thinner
bars. The bench writes DIR/peers.png through draw() whenever --peers ran and some peer ran. No
torch here: tests/python/test_peers_cpu.py runs it on any machine.
"""
import json
import sys

PEER_ORDER = ("marlin", "humming")  # known peers first, in this order; others after, as found
BARS = {"marlin": 0.9}  # chord / peer above this is a miss (issue 29: <= 0.9x Marlin on decode); 1.0 otherwise
# A peer's row is host-bound where, in more than this fraction of its reps, the GPU reached the
# timing's start event before the host had queued the call (bench_w4a16.time_interleaved_us).
HOST_LATE = 0.5


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
    """The rows where at least one peer ran: timed, or raised (state 'error')."""
    names = peer_names(rows)
    return [r for r in rows if any(status(r, n)[0] != "not run" for n in names)]


def label(row):
    return f"{row['scenario']} {row['x']} {row['proj']}"


def status(row, name):
    """(state, chord time / peer time or None): state 'ok', 'wrong' (timed, check failed),
    'error' (no time: the peer raised, `<peer>_check` "ERROR: ...") or 'not run' (no time: the
    peer does not serve the row)."""
    peer_us = row.get(f"{name}_us")
    if peer_us is None:
        return ("error" if str(row.get(f"{name}_check", "")).startswith("ERROR") else "not run"), None
    ratio = row["chord_us"] / peer_us if peer_us > 0 else None
    return ("ok" if row.get(f"{name}_check") == "ok" else "wrong"), ratio


def best_peer(row, names):
    """(name, time) of the fastest peer that ran and checked ok on the row, or None."""
    ok = [(row[f"{n}_us"], n) for n in names if status(row, n)[0] == "ok"]
    if not ok:
        return None
    us, name = min(ok)
    return name, us


def late(row, name=None):
    """Whether the row's time of that peer (None: ours) was host-bound: its `host_late` above
    HOST_LATE."""
    return (row.get("host_late" if name is None else f"{name}_host_late") or 0.0) > HOST_LATE


def table(rows):
    """A Markdown table of the rows where a peer ran: row, chord us, each peer's us ('(wrong)'
    after a failed check, 'error' where it raised, 'not run' where it did not run) and chord / the
    fastest peer that checked ok (below 1: chord is faster), naming that peer. A host-bound time
    (late) is marked '(host)'."""
    names = peer_names(rows)
    head = ["row", "chord us"] + [f"{n} us" for n in names] + ["chord/best peer"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    for row in timed_rows(rows):
        cells = [label(row), f"{row['chord_us']:.1f}" + (" (host)" if late(row) else "")]
        for n in names:
            state, _ = status(row, n)
            if state in ("not run", "error"):
                cells.append(state)
            else:
                cells.append(f"{row[f'{n}_us']:.1f}" + (" (wrong)" if state == "wrong" else "")
                             + (" (host)" if late(row, n) else ""))
        best = best_peer(row, names)
        cells.append(f"{row['chord_us'] / best[1]:.2f} ({best[0]})" if best else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary(rows, worst=10):
    """Text, per peer: how many rows it ran ok / wrong / raised / did not run; chord / peer
    (min / median / max) over its ok rows; the rows where that ratio is above the peer's bar
    (BARS: 0.9 for Marlin, 1.0 otherwise), the `worst` highest listed; how many of its ok rows
    were host-bound (`<peer>_host_late` above HOST_LATE: in most reps the GPU reached the timing's
    start before the host had queued the call, so its time includes host work); the rows where
    it raised, with the message. Empty where no row carries a peer."""
    lines = []
    for name in peer_names(rows):
        states = [(r, *status(r, name)) for r in rows]
        count = {s: sum(1 for _, state, _ in states if state == s) for s in ("ok", "wrong", "error", "not run")}
        ok = sorted((ratio, i) for i, (_, state, ratio) in enumerate(states) if state == "ok" and ratio is not None)
        bar = BARS.get(name, 1.0)
        spread = (f"; chord / {name} min / median / max {ok[0][0]:.3f} / {ok[len(ok) // 2][0]:.3f} / "
                  f"{ok[-1][0]:.3f}; {sum(1 for ratio, _ in ok if ratio > bar)} rows above {bar}") if ok else ""
        host_bound = sum(1 for _, i in ok if late(rows[i], name))
        if any(f"{name}_host_late" in rows[i] for _, i in ok):
            spread += f"; {host_bound} host-bound"
        lines.append(f"{name}: {count['ok']} rows ok, {count['wrong']} wrong, {count['error']} raised, "
                     f"{count['not run']} not run{spread}")
        for ratio, i in sorted(((ratio, i) for ratio, i in ok if ratio > bar), reverse=True)[:worst]:
            row = rows[i]
            lines.append(f"  {ratio:.3f}  {label(row)}: chord {row['chord_us']} us, {name} {row[f'{name}_us']} us")
        bad = [(row, state) for row, state, _ in states if state in ("wrong", "error")]
        for row, state in bad[:worst]:
            lines.append(f"  {state}: {label(row)}: {row.get(f'{name}_check')}")
        if len(bad) > worst:
            lines.append(f"  ... and {len(bad) - worst} more wrong or raised")
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
    bars = len(sel) * max(len(names), 1)
    per_bar = 0.22 if bars <= 240 else max(0.07, 0.22 * 240 / bars)  # inches: the suite's, or thinner
    fig, ax = plt.subplots(figsize=(9, 1.2 + per_bar * bars))
    highest = 1.1
    wrong_labelled = error_labelled = False
    for j, name in enumerate(names):
        color = colors.get(name) or next(palette, "tab:gray")
        ys, widths, wrong, error = [], [], [], []
        for i, row in enumerate(sel):
            y = i + (j - (len(names) - 1) / 2) * bar
            state, ratio = status(row, name)
            if state == "ok" and ratio is not None:
                ys.append(y)
                widths.append(ratio)
                highest = max(highest, ratio)
            elif state == "wrong":
                wrong.append((y, ratio if ratio is not None else 1.0))
            elif state == "error":
                error.append(y)
        ax.barh(ys, widths, height=bar * 0.9, color=color, label=f"chord / {name}")
        for y, ratio in wrong:
            highest = max(highest, ratio)
            ax.plot([ratio], [y], marker="X", color=color, markersize=8, linestyle="none",
                    label=None if wrong_labelled else "check failed")
            wrong_labelled = True
            ax.annotate("wrong", (ratio, y), xytext=(6, 0), textcoords="offset points", va="center",
                        fontsize=7, color=color)
        for y in error:
            ax.plot([0], [y], marker="X", color=color, markersize=8, linestyle="none",
                    label=None if error_labelled else "raised (ERROR)")
            error_labelled = True
            ax.annotate("error", (0, y), xytext=(6, 0), textcoords="offset points", va="center",
                        fontsize=7, color=color)
    ax.axvline(1.0, color="black", linewidth=1)
    ax.axvline(0.9, color="black", linewidth=1, linestyle="--", label="0.9: decode target vs Marlin")
    ax.set_yticks(range(len(sel)))
    ax.set_yticklabels([label(r) for r in sel], fontsize=7 if per_bar >= 0.11 else 5)
    ax.set_ylim(len(sel) - 0.5, -0.5)  # the bench's row order, top to bottom; no margin (long lists)
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
        print("\n".join(line.strip() for line in __doc__.strip().splitlines()[2:5]), file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        data = json.load(f)
    rows, meta = data.get("rows", []), data.get("meta", {})
    if argv[1] in ("--markdown", "--summary"):
        print(table(rows) if argv[1] == "--markdown" else summary(rows))
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
