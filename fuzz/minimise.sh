#!/usr/bin/env bash
# Minimises the committed corpora to few files that cover every edge they cover now.
#
# libFuzzer's set-cover merge (on edges, without hit counts) keeps the fewest inputs it can find
# among those it is given. The script offers it the corpus itself and bundles of it: the files in
# a shuffled order, joined BUNDLE at a time, in ROUNDS different orders. For the targets that
# take bundles (`arena_ops`, `sync_ops`: src/bundle.rs), the files are joined by its separator,
# so each runs from a fresh state and a bundle covers what its files cover. The other targets'
# inputs are sequences of operations joined end to end, which usually cover most of what their
# parts covered (the second part's operations run on the state the first left). The set cover
# prefers the bundles (each covers more), and falls back on the single files for what no bundle
# covers, so the result covers every edge of the corpus (up to the run-to-run noise of a few
# edges, as each input runs once) in far fewer files.
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
# `SEPARATOR` of src/bundle.rs, as printf writes it.
separator='\xfe\xed\xfa\xcebundle\xfe\xed'

# The final coverage of a replay of directory $2 by binary $1.
cov() {
  "$1" -runs=0 "$2" 2>&1 | grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)' | tail -n 1 |
    grep -oE 'cov: [0-9]+'
}

for t in "${targets[@]}"; do
  bin=$bin_dir/$t
  joined_by=end-to-end
  if grep -q 'Bundle<' "fuzz_targets/$t.rs"; then joined_by=separator; fi
  work=$(mktemp -d)
  mkdir "$work/bundles" "$work/min"
  mapfile -t files < <(ls "corpus/$t")
  for ((r = 0; r < rounds; r++)); do
    mapfile -t order < <(printf '%s\n' "${files[@]}" |
      awk -v s="$((seed * 1000 + r))" 'BEGIN { srand(s) } { print rand() "\t" $0 }' |
      sort -n | cut -f 2-)
    for ((i = 0; i < ${#order[@]}; i += bundle)); do
      group=("${order[@]:i:bundle}")
      (
        cd "corpus/$t"
        for ((k = 0; k < ${#group[@]}; k++)); do
          ((k == 0)) || [[ $joined_by != separator ]] || printf "$separator"
          cat "${group[k]}"
        done
      ) >"$work/bundles/$r-$i"
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
