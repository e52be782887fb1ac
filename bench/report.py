"""Renders bench.json (bench/bench_w4a16.py) as the markdown table of docs/performance.md,
so the numbers in the docs are the JSON's. Usage: python3 bench/report.py bench.json"""
import json
import sys


def main(path):
    data = json.load(open(path))
    meta = data["meta"]
    print(f"Commit `{meta['commit']}`, {meta['date']}, {meta['gpu']}, torch {meta['torch']}. "
          f"Command: `{meta['command']}`.\n")
    print("| scenario | x | proj | routed rows | chord us | bf16 grouped_mm us | floor us | chord TFLOP/s | "
          "weight GB/s | grouped_mm / chord | floor / chord | check |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in data["rows"]:
        print(f"| {r['scenario']} | {r['x']} | {r['proj']} | {r['routed_rows']} | {r['chord_us']} | "
              f"{r['grouped_mm_bf16_us']} | {r['floor_us']} | {r['tflops']} | {r['weight_gbps']} | "
              f"{r['vs_grouped_mm']} | {r['vs_floor']} | {r['check']} |")


if __name__ == "__main__":
    main(sys.argv[1])
