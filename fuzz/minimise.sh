#!/usr/bin/env bash
# Minimises the committed corpora to few files that cover every edge they cover now.
#
# libFuzzer's set-cover merge (on edges, without hit counts) keeps the fewest inputs it can find
# among those it is given. An input here is a sequence of operations, so two inputs joined end to
# end are an input too, which usually covers most of what both covered (the second one's
# operations run on the state the first left). The script offers the set cover the corpus itself
# and bundles of it: the files in a shuffled order, joined by BUNDLE at a time, in ROUNDS
# different orders. The set cover prefers the bundles (each covers more), and falls back on the
# single files for what no bundle covers, so the result covers every edge of the corpus (up to
# the run-to-run noise of a few edges, as each input runs once) in far fewer files.
#
# Usage: fuzz/minimise.sh [target...]     (default: every target with a committed corpus)
# Environment: BUNDLE (default 3), ROUNDS (default 3), SEED (default 1, the shuffle's seed).
# Prints the final `cov:` of the corpus before and after, and replaces fuzz/corpus/<target>; the
# change is left for `git add` (check the two figures first).
set -euo pipefail
cd "$(dirname "$0")"

bundle=${BUNDLE:-3}
rounds=${ROUNDS:-3}
seed=${SEED:-1}
if [[ $# -gt 0 ]]; then
  targets=("$@")
else
  targets=()
  for d in corpus/*/; do targets+=("$(basename "$d")"); done
fi

cargo +nightly fuzz build -a
bin_dir=target/x86_64-unknown-linux-gnu/release

# The final coverage of a replay of directory $2 by binary $1.
cov() {
  "$1" -runs=0 "$2" 2>&1 | grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)' | tail -n 1 |
    grep -oE 'cov: [0-9]+'
}

for t in "${targets[@]}"; do
  bin=$bin_dir/$t
  work=$(mktemp -d)
  mkdir "$work/bundles" "$work/min"
  mapfile -t files < <(ls "corpus/$t")
  for ((r = 0; r < rounds; r++)); do
    mapfile -t order < <(printf '%s\n' "${files[@]}" |
      awk -v s="$((seed * 1000 + r))" 'BEGIN { srand(s) } { print rand() "\t" $0 }' |
      sort -n | cut -f 2-)
    for ((i = 0; i < ${#order[@]}; i += bundle)); do
      group=("${order[@]:i:bundle}")
      (cd "corpus/$t" && cat "${group[@]}") >"$work/bundles/$r-$i"
    done
  done
  "$bin" -use_counters=0 -set_cover_merge=1 "$work/min" "corpus/$t" "$work/bundles" \
    >"$work/merge.log" 2>&1
  before=$(cov "$bin" "corpus/$t")
  after=$(cov "$bin" "$work/min")
  echo "$t: ${#files[@]} files ($before) -> $(ls "$work/min" | wc -l) files ($after)"
  rm -r "corpus/$t"
  mv "$work/min" "corpus/$t"
  rm -r "$work"
done
