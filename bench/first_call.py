"""Time to the first result of a fresh process: pack a Qwen3-30B-A3B expert layer and run one
indexed decode GEMM, with an empty private cache. Run it twice, with the wheel's kernel
layer (the default) and without it (CHORD_CACHE_READONLY_DIRS pointing at an empty
folder), to see what the layer saves.

    CHORD_CACHE_DIR=$(mktemp -d) python bench/first_call.py
"""
import json
import time

start = time.perf_counter()
import torch  # noqa: E402

import chord_kernels as ck  # noqa: E402

imported = time.perf_counter()
experts, n, k, tokens, top_k = 128, 1536, 2048, 8, 8
gen = torch.Generator(device="cuda").manual_seed(0)
codes = torch.randint(0, 16, (experts, n, k), dtype=torch.uint8, device="cuda", generator=gen)
scales = (torch.rand(experts, n, k // 32, device="cuda", generator=gen) * 0.01).to(torch.bfloat16)
torch.cuda.synchronize()
ready = time.perf_counter()
packed = ck.pack_w4a16(codes, scales)
x = torch.randn(tokens, k, device="cuda", generator=gen).to(torch.bfloat16)
topk_ids = torch.randint(0, experts, (tokens, top_k), dtype=torch.int32, device="cuda", generator=gen)
sorted_ids, expert_ids, ntp = ck.moe_align_block_size(topk_ids, 16, experts)
out = ck.indexed(x, packed, sorted_ids, expert_ids, ntp, top_k, block_size=16)
torch.cuda.synchronize()
done = time.perf_counter()
print(json.dumps({"import_s": imported - start, "first_pack_and_gemm_s": done - ready,
                  "jit": ck.jit_stats()}))
