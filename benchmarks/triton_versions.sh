#!/usr/bin/env bash
# The CPU path (Triton's interpreter) on each supported Triton release: installs each release with
# `pip install --no-deps --target`, makes a throwaway venv whose .pth puts it (and numpy < 2.4 for
# Triton < 3.7, triton-lang/triton#9171) before the environment's own site-packages, so that the
# sandbox's judge, zygote and runners (started with that venv's python) import it too, and runs the
# tests that cover the guards' use of the interpreter, then `tritongym demo` (what `make demo` runs).
# One release at a time, under `nice`.
#
#   PYTHON=.venv/bin/python bash benchmarks/triton_versions.sh            # 3.4.0 ... 3.8.0 and the installed one
#   VERSIONS="3.4.0 installed" bash benchmarks/triton_versions.sh          # a subset
#
# Writes benchmarks/results/triton_versions_cpu.txt (OUT=... elsewhere); CACHE keeps the installs.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
VERSIONS="${VERSIONS:-3.4.0 3.5.0 3.6.0 3.7.0 3.8.0 installed}"
CACHE="${CACHE:-${TMPDIR:-/tmp}/tritongym-triton-versions}"
OUT="${OUT:-$ROOT/benchmarks/results/triton_versions_cpu.txt}"
TESTS=(tests/test_frontend.py tests/test_bundled.py tests/test_verdicts.py tests/test_profiling.py
       tests/adversarial/test_isolation.py tests/test_triton_compat.py tests/adversarial/test_redteam10.py
       tests/test_honest_candidates.py tests/adversarial/test_redteam11.py tests/adversarial/test_redteam12.py
       tests/adversarial/test_exploits.py tests/adversarial/test_redteam13.py tests/adversarial/test_cpusize.py
       tests/adversarial/test_redteam14.py tests/adversarial/test_redteam15.py tests/test_host_reads.py)

PROBE='
from tritongym.evaluate import EvalConfig, evaluate
from tritongym.problems import load_bundled

problem = load_bundled()[0]
source = "import triton\nprint(\"candidate imports Triton\", triton.__version__)\n" + problem.solution
result = evaluate(problem.small(), source, EvalConfig(device="cpu", trials=1))
said = [line.split()[-1] for line in result.stdout.splitlines() if line.startswith("candidate imports Triton")]
print("Triton", said[0] if said else "(none said)", result.verdict.value)
'

BASE="$("$PYTHON" -c 'import sys; print(sys._base_executable)')"
SITE="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
mkdir -p "$CACHE"
lines=()
for version in $VERSIONS; do
    if [ "$version" = installed ]; then
        python="$PYTHON"
    else
        target="$CACHE/triton-$version"
        [ -d "$target/triton" ] || "$PYTHON" -m pip install -q --no-deps --target "$target" "triton==$version"
        paths="$target"
        minor="${version#3.}"
        if [ "${version%%.*}" = 3 ] && [ "${minor%%.*}" -lt 7 ]; then
            numpy="$CACHE/numpy-lt-2.4"
            [ -d "$numpy/numpy" ] || "$PYTHON" -m pip install -q --no-deps --target "$numpy" "numpy<2.4"
            paths="$paths"$'\n'"$numpy"
        fi
        venv="$CACHE/venv-$version"
        [ -x "$venv/bin/python" ] || "$BASE" -m venv --without-pip "$venv"
        purelib="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
        printf '%s\n%s\n' "$paths" "$SITE" > "$purelib/tritongym-triton-version.pth"
        python="$venv/bin/python"
    fi
    found="$(cd "$ROOT" && "$python" -c 'import numpy, triton; print(triton.__version__, "numpy", numpy.__version__)')"
    echo "== Triton $found"
    # the sandbox's processes must import this release too: a candidate says which one it got
    seen="$(cd "$ROOT" && PYTHONPATH="$ROOT" nice -n 10 "$python" -c "$PROBE" 2>/dev/null | tail -n 1)" || true
    echo "   a candidate's runner: $seen"
    log="$CACHE/pytest-${version}.log"
    (cd "$ROOT" && PYTHONPATH="$ROOT" nice -n 10 "$python" -m pytest -q -p no:cacheprovider "${TESTS[@]}" > "$log" 2>&1) || true
    summary="$(tail -n 1 "$log" | sed 's/^=* //; s/ =*$//')"
    demo="$(cd "$ROOT" && PYTHONPATH="$ROOT" nice -n 10 "$python" -m tritongym demo 2>&1 | tail -n 1)" || true
    echo "   $summary; demo: $demo (log: $log)"
    lines+=("$found: candidate's runner: $seen; $summary; tritongym demo: $demo")
done

{
    echo "# The CPU path (TRITON_INTERPRET=1) on each Triton release: benchmarks/triton_versions.sh"
    echo "# $("$PYTHON" -c 'import platform, torch; print("python", platform.python_version(), "torch", torch.__version__)'), $(date -u +%Y-%m-%d)"
    echo "# tests: ${TESTS[*]}; then tritongym demo (the bundled solutions, small sizes)"
    printf '%s\n' "${lines[@]}"
} > "$OUT"
cat "$OUT"
