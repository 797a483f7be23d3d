"""Test setup shared by ``tests/`` and ``theory/``: four fake CPU devices (for the sharded sweep
and data-parallel training), XLA's quickest compilation, a compilation cache for the session,
deterministic hypothesis, which test files share an xdist worker, and, on demand
(``BORNBIASED_ENFORCE_SLOW=1``), the slow tier's rule checked on the run's own times."""

import atexit
import collections
import os
import shutil
import tempfile


def with_host_device_count(flags: str, n: int) -> str:
    """``flags`` with XLA's fake host device count set to n, unless the flags already set one
    (a user's own XLA_FLAGS are kept, not replaced)."""
    if "--xla_force_host_platform_device_count" in flags:
        return flags
    return f"{flags} --xla_force_host_platform_device_count={n}".strip()


def with_optimization_level(flags: str, level: int) -> str:
    """``flags`` with XLA's backend optimisation level set to ``level``, unless the flags
    already set one."""
    if "--xla_backend_optimization_level" in flags:
        return flags
    return f"{flags} --xla_backend_optimization_level={level}".strip()


# Must precede the first import of jax anywhere in the test session. The suite's programs are
# tiny models run for a few steps, so XLA's compile time outweighs their run time: level 0
# compiles them about twice as fast and runs them about twice as slowly, which took the suite
# from 1425 s to 1142 s on the 2-core CPU (benchmarks/results/suite_time_cpu.md), every test
# passing under both levels (the golden values of tests/test_golden.py hold within their stated
# tolerances; a level may change float32 rounding, not a result beyond it). The long
# simulations of theory/ ask for full optimisation themselves (theory.simulate.OPTIMISED).
os.environ["XLA_FLAGS"] = with_optimization_level(
    with_host_device_count(os.environ.get("XLA_FLAGS", ""), 4), 0)
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# The tests check float32 identities: no TF32 where a GPU would otherwise use it
# (bornbiased_jax/precision.py).
os.environ.setdefault("JAX_DEFAULT_MATMUL_PRECISION", "highest")
# Many tests build the same programs (a train step of llama2-tiny, a sweep of a tiny preset),
# each Run or CLI call under a new jit, and the CLI tests run them again in subprocesses. A
# persistent XLA compilation cache, fresh for each session and shared with the subprocesses
# through the environment, compiles each distinct program once. A cached executable is the
# binary the first compilation produced, so no result changes.
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    _cache_dir = tempfile.mkdtemp(prefix="bornbiased-jax-test-xla-cache-")
    atexit.register(shutil.rmtree, _cache_dir, ignore_errors=True)
    os.environ["JAX_COMPILATION_CACHE_DIR"] = _cache_dir
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """With ``-n 2`` (``--dist loadfile``, pyproject.toml) each test file goes whole to one
    worker, so its module fixtures (trained tiny runs, compiled programs) are built once; the
    files of ``theory/`` go to one worker together, so the session's shared simulations
    (theory/conftest.py) run once for the table's test and the per-claim tests making the same
    calls; and the costliest files are handed out first (``SECONDS``)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class TheoryTogether(LoadFileScheduling):
        def _split_scope(self, nodeid):
            path = super()._split_scope(nodeid)
            return "theory/" if path.startswith("theory/") else path

        def _assign_work_unit(self, node):
            # Longest first: a worker that frees up takes the costliest file left, so the
            # two workers finish together instead of one waiting on a long file started last.
            scope = max(self.workqueue, key=lambda s: SECONDS.get(s, 0.3 * len(self.workqueue[s])))
            self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return TheoryTogether(config, log)


# Seconds each file's tests took on the 2-core CPU (every phase of pytest --durations=0 -n 2,
# summed per file, with the optimisation level above; benchmarks/results/suite_time_cpu.md):
# the order in which the scheduler above hands files out. A file not listed counts 0.3 s per
# test. Only the order matters; nothing is asserted about time.
SECONDS = {"tests/test_sweep.py": 168, "tests/test_train.py": 150, "tests/test_seeds.py": 141,
           "tests/test_model.py": 131, "tests/test_resume.py": 130, "tests/test_multihost.py":
           124, "tests/test_sinks.py": 115, "theory/": 114, "tests/test_sources.py": 106,
           "tests/test_sinks_study.py": 94, "tests/test_lineage.py": 82,
           "tests/test_gguf_real.py": 62, "tests/test_matched.py": 59,
           "tests/test_fingerprint_many.py": 52, "tests/test_permutation.py": 50,
           "tests/test_token_preference.py": 48, "tests/test_blockwise.py": 32,
           "tests/test_campaign.py": 31, "tests/test_real_model.py": 30, "tests/test_bbm.py": 29,
           "tests/test_initialisation_rules.py": 26, "tests/test_hf.py": 26,
           "tests/test_golden.py": 26, "tests/test_sinks_arms.py": 24, "tests/test_aligned.py":
           22, "tests/test_bos.py": 21, "tests/test_rotation.py": 21, "tests/test_edits.py": 20,
           "tests/test_lineage_bench.py": 19, "tests/test_config_fields.py": 19,
           "tests/test_readme.py": 18, "tests/test_gguf.py": 16,
           "tests/test_contraction_probes.py": 15, "tests/test_baselines.py": 14,
           "tests/test_gemma3_model.py": 45, "tests/test_gguf_gemma3.py": 45,
           "tests/test_gemma3_commands.py": 25, "tests/test_hf_gemma3.py": 10}


settings.register_profile("bornbiased", derandomize=True, deadline=None, max_examples=25,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("bornbiased")


# The slow tier's rule (pyproject.toml's ``slow`` marker): a test of 15 s or more on the 2-core
# CPU belongs to it. With BORNBIASED_ENFORCE_SLOW=1 the session checks that on its own times:
# each test's phases (setup, call, teardown) summed, as ``--durations`` reports them, so a test
# that sets up a module fixture of that length counts it (the rule puts the tests sharing such
# a fixture in the slow tier too). A test not marked slow that took BORNBIASED_SLOW_SECONDS (15)
# or more is listed at the session's end and fails the session. Off by default, and off in CI:
# on a shared 2-core machine a 12 s test can take 15 s under load, so the check is run by hand
# on an otherwise idle machine. The rule's other half, end-to-end runs of 10 s or more, needs a
# judgement of what is end to end and is not checked.
ENFORCE_SLOW = "BORNBIASED_ENFORCE_SLOW"
SLOW_SECONDS = "BORNBIASED_SLOW_SECONDS"


class SlowTierCheck:
    """Sums each test's phases and, at the session's end, lists the tests not marked slow that
    took ``threshold`` seconds or more and makes the session fail (on the xdist controller,
    which receives every worker's reports, or in a run without workers)."""

    def __init__(self, threshold: float):
        self.threshold = threshold
        self.seconds = collections.defaultdict(float)
        self.slow = set()

    def pytest_runtest_logreport(self, report):
        self.seconds[report.nodeid] += report.duration
        if "slow" in report.keywords:
            self.slow.add(report.nodeid)

    def too_slow(self) -> list[tuple[str, float]]:
        return sorted(((n, s) for n, s in self.seconds.items()
                       if s >= self.threshold and n not in self.slow), key=lambda x: -x[1])

    def pytest_sessionfinish(self, session, exitstatus):
        if self.too_slow() and exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        found = self.too_slow()
        if not found:
            return
        terminalreporter.section("slow tier", sep="=", red=True, bold=True)
        terminalreporter.line(f"{len(found)} test(s) not marked slow took {self.threshold:g} s "
                              "or more (mark them @pytest.mark.slow; pyproject.toml):")
        for nodeid, seconds in found:
            terminalreporter.line(f"  {seconds:8.2f} s  {nodeid}")


def pytest_configure(config):
    if os.environ.get(ENFORCE_SLOW, "") in ("", "0") or hasattr(config, "workerinput"):
        return
    config.pluginmanager.register(
        SlowTierCheck(float(os.environ.get(SLOW_SECONDS, "15"))), "bornbiased-slow-tier")
