"""CPU: another build's libchord.so opened by path (chord_kernels.load_library) answers through
the same functions as the linked one; a library that lacks an entry point, has another C API
version or is not chord is refused with an error that says so. No GPU is touched: only the
GPU-free entry points (version, sizes, tuning tables, JIT counters) are called.

CHORD_OTHER_LIBRARY=PATH adds the same checks on another build (e.g. the baseline that
bench/bench_w4a16.py --against times); without it those tests skip."""
import os
import shutil
import subprocess

import pytest

import chord_kernels as ck
from chord_kernels import _native

# (E, N, K): valid shapes of each profile's layers, then shapes the size helpers refuse (-1;
# older builds answered some of those for NF4).
VALID_SHAPES = [(1, 16, 64), (48, 4096, 7168), (48, 7168, 2048), (384, 512, 7168), (128, 1536, 2048),
                (128, 2048, 768)]
SHAPES = VALID_SHAPES + [(8, 100, 64), (8, 16, 96), (0, 16, 64), (70000, 16, 64)]
# (E, N, K, top_k) for chord_w4a16_tuning_json: shapes with a table and one without.
TABLE_SHAPES = [(48, 4096, 7168, 1), (48, 7168, 2048, 8), (384, 512, 7168, 8), (128, 1536, 2048, 8),
                (16, 1024, 1024, 1)]
ARCHES = ["sm_90a", "sm_80", None]


def package_library():
    return os.path.join(os.path.dirname(ck.__file__), "libchord.so")


def answers(lib):
    """What a library says through the GPU-free entry points of the module's table."""
    out = {"api_version": lib.api_version(), "version": lib.version(), "layout": lib.layout_version(),
           "nf4_layout": lib.nf4_layout_version(), "alignment": lib.contiguous_alignment(),
           "jit_stats_keys": sorted(lib.jit_stats())}
    for e, n, k in SHAPES:
        out[(e, n, k)] = (lib.weight_bytes(e, n, k), lib.scale_bytes(e, n, k), lib.nf4_weight_bytes(e, n, k),
                          lib.nf4_absmax_bytes(e, n, k))
    for arch in ARCHES:
        for shape in TABLE_SHAPES:
            try:
                out[(arch,) + shape] = lib.tuning_json(arch, *shape)
            except ValueError as e:  # builds before "no table" returned 0 refused the shape
                out[(arch,) + shape] = f"ValueError: {e}"
    return out


@pytest.fixture(scope="module")
def second_copy(tmp_path_factory):
    # Another path and inode: dlopen loads a second copy rather than returning the linked one.
    path = tmp_path_factory.mktemp("other") / "libchord.so"
    shutil.copy(package_library(), path)
    return ck.load_library(str(path))


def test_last_kernel_is_none_before_a_call(second_copy):
    # chord_w4a16_last_kernel is per thread and per copy: the second copy has served no W4A16
    # GEMM on any thread.
    assert second_copy.last_kernel() is None
    assert ck.last_w4a16_kernel(library=second_copy) is None


def test_second_copy_answers_as_the_linked_library(second_copy):
    assert second_copy.missing == []
    assert answers(second_copy) == answers(_native.lib)
    assert answers(second_copy)[(48, 4096, 7168)][0] == 48 * 4096 * 7168 // 2
    assert answers(second_copy)[(8, 100, 64)][0] == -1
    assert second_copy.tuning_json("sm_90a", 48, 4096, 7168, 1) is not None


def test_second_copy_is_its_own_library(second_copy):
    with open("/proc/self/maps") as f:
        maps = f.read()
    assert second_copy.path in maps
    assert os.path.realpath(package_library()) in maps
    # A refused argument comes back with that copy's own chord_last_error text.
    with pytest.raises(ValueError, match="arch"):
        second_copy.tuning_json("sm_1", 48, 4096, 7168, 1)


def test_public_functions_take_the_library(second_copy):
    assert ck.tuning_table_json("sm_90a", 48, 4096, 7168, 1, library=second_copy) == \
        ck.tuning_table_json("sm_90a", 48, 4096, 7168, 1)
    assert ck.contiguous_alignment(library=second_copy) == ck.contiguous_alignment()
    assert set(ck.jit_stats(library=second_copy)) == set(ck.jit_stats())
    with pytest.raises(TypeError, match="load_library"):
        ck.contiguous_alignment(library=package_library())


def test_load_library_opens_a_file_once(second_copy):
    assert ck.load_library(second_copy.path) is second_copy
    linked = ck.load_library(package_library())  # the linked file by path: dlopen returns it
    assert linked.api_version() == ck._lib.api_version()
    assert linked.missing == []


def c_compiler():
    for name in ("cc", "gcc", "clang"):
        if shutil.which(name):
            return name
    return None


def stub_library(tmp_path, name, body):
    compiler = c_compiler()
    if compiler is None:
        pytest.skip("needs a C compiler (cc, gcc or clang) to build a stand-in library")
    src = tmp_path / f"{name}.c"
    src.write_text(body)
    out = tmp_path / f"{name}.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(out), str(src)], check=True)
    return str(out)


# A library with the required entry points and the sizes only: every other is missing.
STUB = """
#include <stdint.h>
int chord_api_version(void) { return API_VERSION; }
const char* chord_version(void) { return "0.0.1-stub"; }
const char* chord_last_error(void) { return ""; }
const char* chord_status_string(int status) { (void)status; return "stub"; }
int64_t chord_w4a16_weight_bytes(int64_t e, int64_t n, int64_t k) { return e * n * k / 2; }
"""


def test_missing_entry_point_is_an_error_when_called(tmp_path):
    stub = ck.load_library(stub_library(tmp_path, "stub", "#define API_VERSION 1\n" + STUB))
    assert stub.version() == "0.0.1-stub"
    assert stub.weight_bytes(2, 16, 64) == 1024
    assert "chord_moe_activation" in stub.missing and "chord_w4a16_weight_bytes" not in stub.missing
    with pytest.raises(NotImplementedError, match=r"stub\.so has no chord_moe_activation"):
        stub.moe_activation(0, "a", 0, 0, 1, 8, 0, 1, 0, 0, 0, 0, 0, 0)
    with pytest.raises(NotImplementedError, match="has no chord_w4a16_tuning_json"):
        ck.tuning_table_json("sm_90a", 48, 4096, 7168, 1, library=stub)


def test_other_api_version_is_refused(tmp_path):
    path = stub_library(tmp_path, "future", "#define API_VERSION 2\n" + STUB)
    with pytest.raises(ImportError, match="C API version 2; this module is built for version 1"):
        ck.load_library(path)


def test_not_a_chord_library_is_refused(tmp_path):
    path = stub_library(tmp_path, "other", "int something(void) { return 0; }\n")
    with pytest.raises(ImportError, match="not a chord library .no chord_api_version"):
        ck.load_library(path)
    with pytest.raises(OSError, match="cannot open"):
        ck.load_library(str(tmp_path / "absent.so"))


OTHER = os.environ.get("CHORD_OTHER_LIBRARY")
needs_other = pytest.mark.skipif(not OTHER, reason="set CHORD_OTHER_LIBRARY to another build's libchord.so "
                                                  "(e.g. the --against baseline) to check it binds")


@needs_other
def test_other_build_binds_and_answers():
    other = ck.load_library(OTHER)
    assert other.api_version() == ck._lib.api_version()
    ours, theirs = answers(_native.lib), answers(other)
    for key in ("layout", "nf4_layout", "alignment", "jit_stats_keys") + tuple(VALID_SHAPES):
        assert theirs[key] == ours[key], key
    for key, text in theirs.items():  # tuning tables may differ between builds
        if isinstance(key, tuple) and len(key) == 5 and text is not None and not text.startswith("ValueError"):
            assert text.startswith("[["), (key, text)
    # A shape with a table in both builds gets rows from both.
    assert theirs[("sm_90a", 48, 4096, 7168, 1)].startswith("[[")


@needs_other
def test_other_build_missing_entry_points_raise():
    other = ck.load_library(OTHER)
    for name in other.missing:
        assert name.startswith("chord_")
    if "chord_moe_activation" in other.missing:
        with pytest.raises(NotImplementedError, match="has no chord_moe_activation"):
            other.moe_activation(0, "a", 0, 0, 1, 8, 0, 1, 0, 0, 0, 0, 0, 0)
