"""The suite's shapes, read from shapes/suite.json (shapes/README.md): the models, their splits
(one GPU's experts and GEMM shapes) and the bench's rows; `Section("generalization")` reads the
generalization set the same way. The library's parser checks the file strictly (the CPU tests);
this module only reads it."""
import json
import os

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "shapes", "suite.json")
_SWEEP_KEYS = ("tokens", "tokens_per_expert", "rows_per_expert")


def load(path=PATH, section="suite"):
    with open(path) as f:
        return json.load(f)[section]


_SUITE = load()
_MODELS = {m["name"]: m for m in _SUITE["models"]}
SPLITS = {s["name"]: s for s in _SUITE["splits"]}
ROWS = {r["scenario"]: r for r in _SUITE["rows"]}


def model(split):
    """The model a split holds a part of."""
    return _MODELS[SPLITS[split]["model"]]


def gemm(split):
    """(experts_local, gate_up N, K, down N, K) of a split."""
    s = SPLITS[split]
    return (s["experts_local"], s["gate_up"]["n"], s["gate_up"]["k"], s["down"]["n"], s["down"]["k"])


def row_sweep(row, quick):
    """The values a row runs: its sweep, its quick subset under --quick (quick true), or the
    values of bench_w4a16.py --sweep (quick a list)."""
    if isinstance(quick, (list, tuple)):
        return list(quick)
    return list(row["quick"]) if quick else next(list(row[k]) for k in _SWEEP_KEYS if k in row)


def sweep(scenario, quick):
    """The values a scenario of the suite runs (row_sweep)."""
    return row_sweep(ROWS[scenario], quick)


def routing(scenario):
    """An indexed scenario's (experts the routes are drawn over, top_k, fixed routing block)."""
    row = ROWS[scenario]
    split = SPLITS[row["split"]]
    over = split["experts_local"] if row["routed_over"] == "local_experts" else model(row["split"])["experts"]
    return over, model(row["split"])["top_k"], row["routing_block"]


class Section:
    """One section of the file: models and splits by name, rows in file order."""

    def __init__(self, name, path=PATH):
        doc = load(path, name)
        self.name = name
        self.models = {m["name"]: m for m in doc["models"]}
        self.splits = {s["name"]: s for s in doc["splits"]}
        self.rows = list(doc["rows"])

    def model(self, split):
        return self.models[self.splits[split]["model"]]

    def sweep(self, row, quick):
        """The values a row runs (row_sweep)."""
        return row_sweep(row, quick)
