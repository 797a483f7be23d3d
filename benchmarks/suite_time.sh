#!/usr/bin/env bash
# The suite's time as CI sees it: a fresh clone of COMMIT (default HEAD), `CI=true bash .ci/run`
# (a new virtual environment, the install, the README's test command -- the suite -- and then the
# slow tier), timed by the shell; prints pytest's line of each tier.
# Run it on an idle machine; a second run against an older commit gives a comparison.
#
#     bash benchmarks/suite_time.sh                # HEAD
#     bash benchmarks/suite_time.sh 398ee83        # an older commit, same machine
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
commit="$(git -C "$repo" rev-parse "${1:-HEAD}")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
git clone --quiet "$repo" "$work/repo"
git -C "$work/repo" checkout --quiet "$commit"
[ -e "$repo/../shared" ] && ln -s "$(cd "$repo/../shared" && pwd)" "$work/shared"
start=$(date +%s.%N)
rc=0
(cd "$work/repo" && CI=true bash .ci/run) > "$work/ci.log" 2>&1 || rc=$?
end=$(date +%s.%N)
echo "commit ${commit:0:7}: exit $rc, $(python3 -c "print(round($end - $start, 1))") s in all (clone excluded);" \
     "load average before the next run: $(cut -d' ' -f1 /proc/loadavg)"
grep -E "^(FAILED|ERROR) |(passed|failed).* in [0-9.]+s" "$work/ci.log" || tail -1 "$work/ci.log"
