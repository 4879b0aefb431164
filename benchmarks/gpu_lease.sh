#!/usr/bin/env bash
# One GPU lease, in three calls of the device tool, for the runs that need a GPU:
#
#   bash benchmarks/gpu_lease.sh prepare      # here: .device/ (the pages' bundle, wheels, staged data)
#   bash benchmarks/gpu_lease.sh throughput   # there, call 1 (carry .device/stage1): lm_throughput alone
#   bash benchmarks/gpu_lease.sh stage        # there, call 2 (carry .device/stage2): the rest of the data
#   bash benchmarks/gpu_lease.sh main         # there, call 3 (carry .device/wheels .device/bundle):
#                                             #   the scaling runs, every page that trains and every
#                                             #   solution notebook, side by side, in $PROFILE (full)
#
# A call carries at most 64 MiB, so the MiniLM weights (87 MiB) and gensim's wheel (27 MiB) travel in
# the first two calls, into /tmp/stage on the machine, which keeps it while it stays warm (30 s
# between calls).  What comes back is $OUT/results.tgz and the logs; `record` files them here:
#
#   bash benchmarks/gpu_lease.sh record DIR   # DIR: where the device tool put $OUT's files
#
# and before it, here, after changes to the pages or to what they import:
#
#   bash benchmarks/gpu_lease.sh rehearse     # all of `main` in quick, in a lent-machine-shaped venv
set -euo pipefail
cd "$(dirname "$0")/.."
PROFILE=${PROFILE:-full}
# Packages the pages and the kernel import that the lent machine may lack, beside those pinned
# below: sacrebleu (BLEU, chrF) and what it imports, num2words, gensim's wrapt, and what ipython,
# ipykernel and nbval need (tests/test_benchmarks_gpu_lease.py checks that nothing is missing)
CARRIED="sacrebleu|portalocker|tabulate|colorama|lxml|num2words|wrapt|attrs|coverage|nest-asyncio2|psutil|pygments"
PYTHON=${PYTHON:-python3}
OUT=${OUT:-/tmp/gpu-lease-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
FIRST_PAGES=${FIRST_PAGES:-"05-transformers/language-model 05-transformers/long-context 05-transformers/scaling
    06-bert/masked-lm 06-bert/next-sentence 05-transformers/copying 05-transformers/translation
    05-transformers/tuning 06-bert/fine-tuning 06-bert/sentence-pairs"}

case "${1:-}" in
prepare)
    rm -rf .device/stage1 .device/stage2 .device/wheels .device/bundle
    mkdir -p .device/stage1 .device/stage2 .device/wheels
    # Every page that trains, those the course's argument turns on first (issue 40: the Transformer
    # against the LSTM, BERT's pretraining), so that a deadline too short for all cuts the others.
    grep -lE "choose\(|seconds=" book/*/*.md | sed 's#book/##; s#\.md$##' > .device/all-pages.txt
    for page in $FIRST_PAGES; do
        if grep -qx "$page" .device/all-pages.txt; then echo "$page"; fi
    done > .device/pages.txt
    grep -vxF -f .device/pages.txt .device/all-pages.txt >> .device/pages.txt || true
    $PYTHON benchmarks/full_profile.py prepare --bundle .device/bundle $(cat .device/pages.txt)
    weights=$($PYTHON -c "from nlpbook import bert; print(bert.minilm_path() / 'model.safetensors')")
    split -n 3 -d "$weights" .device/minilm.part
    sha256sum "$weights" | cut -d' ' -f1 > .device/stage2/minilm.sha256
    mv .device/minilm.part00 .device/stage1/ && mv .device/minilm.part01 .device/minilm.part02 .device/stage2/
    wheels="--no-deps --only-binary=:all: --python-version 3.12 --implementation cp"
    for n in 17 24 26 27 28 31 34; do wheels="$wheels --platform manylinux_2_${n}_x86_64"; done
    $PYTHON -m pip download -q $wheels --platform manylinux2014_x86_64 -d .device/stage1 \
        gensim==4.4.0 smart_open==9.0.2
    # nbval and the Jupyter kernel: the lent machine has pytest, not Jupyter
    $PYTHON -m pip download -q $wheels --platform manylinux2014_x86_64 -d .device/wheels \
        asttokens==3.0.2 comm==0.2.3 debugpy==1.8.22 executing==2.3.0 fastjsonschema==2.22.3 \
        ipykernel==7.4.0 ipython==9.18.1 ipython_pygments_lexers==1.1.1 jedi==0.20.1 jsonschema==4.26.0 \
        jsonschema-specifications==2025.9.1 jupyter_client==8.10.0 jupyter_core==5.9.1 \
        matplotlib-inline==0.2.2 nbclient==0.11.0 nbformat==5.11.1 nbval==0.11.0 parso==0.8.7 \
        pexpect==4.9.0 platformdirs==4.14.5 prompt_toolkit==3.0.53 ptyprocess==0.7.0 pure_eval==0.2.4 \
        pyzmq==27.3.0 referencing==0.37.0 rpds-py==2026.9.1 stack-data==0.6.3 tornado==6.6.1 \
        traitlets==5.16.1 wcwidth==0.9.4
    # what nlpbook, gensim, nbval and the kernel import that the lent machine may lack (CARRIED),
    # at requirements.txt's pins
    $PYTHON -m pip download -q $wheels --platform manylinux2014_x86_64 -d .device/wheels \
        $(grep -iE "^($CARRIED)==" requirements.txt)
    cp .device/pages.txt .device/bundle/pages.txt
    du -sh .device/stage1 .device/stage2 .device/wheels .device/bundle
    ;;
throughput)
    mkdir -p /tmp/stage && cp .device/stage1/* /tmp/stage/
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
    # what the machine has, for the next session's plans (scipy, for one, is assumed there)
    $PYTHON -m pip list --format=freeze > "$OUT/packages.txt" 2>/dev/null || true
    (cd benchmarks && $PYTHON lm_throughput.py --sizes ${SIZES:-standard full 10M} --compile ${COMPILE:-10M} \
        --steps ${STEPS:-20} --json "$OUT/throughput.json") 2>&1 | tee "$OUT/throughput.txt"
    ;;
stage)
    mkdir -p /tmp/stage && cp .device/stage2/* /tmp/stage/
    cat /tmp/stage/minilm.part0* | sha256sum | cut -d' ' -f1 | diff - /tmp/stage/minilm.sha256 \
        && echo "MiniLM weights joined, SHA-256 as here"
    ls -la /tmp/stage
    ;;
main)
    # SKIP_INSTALL=1: try the call here, in the course's environment, before spending device time
    [ -n "${SKIP_INSTALL:-}" ] || $PYTHON -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        .device/wheels/*.whl /tmp/stage/*.whl
    export PYTHONPATH=/tmp/site:$PWD
    if ls /tmp/stage/minilm.part0* >/dev/null 2>&1; then cat /tmp/stage/minilm.part0* > .device/bundle/minilm/model.safetensors; fi
    rm -rf /tmp/lease && mkdir -p /tmp/lease
    $PYTHON benchmarks/lm_scaling.py prepare --data /tmp/lease/scaling.pt --bundle .device/bundle
    timeout ${DEADLINE:-450} $PYTHON benchmarks/lm_scaling.py run --data /tmp/lease/scaling.pt \
        --out /tmp/lease/scaling.json ${SCALING:---sizes S M L --seeds 0 1 2 --sweep-size M --steps 2000} \
        --jobs ${SCALING_JOBS:-4} --deadline $(( ${DEADLINE:-450} - 30 )) > /tmp/lease/scaling.log 2>&1 &
    $PYTHON benchmarks/solution_suite.py --profile $PROFILE --jobs 7 --deadline $(( ${DEADLINE:-450} - 15 )) \
        --bundle .device/bundle --json /tmp/lease/solutions.json ${REQUIRE_GPU---require-gpu} \
        > /tmp/lease/solutions.log 2>&1 &
    $PYTHON benchmarks/full_profile.py run --bundle .device/bundle --out /tmp/lease/full --profile $PROFILE \
        --deadline $(( ${DEADLINE:-450} - 10 )) --least 30 --jobs ${PAGE_JOBS:-5} --in-order \
        $(cat .device/bundle/pages.txt) > /tmp/lease/full.log 2>&1 || true
    wait || true
    tail -n 40 /tmp/lease/scaling.log /tmp/lease/solutions.log; grep -E "^[0-9]{2}-" /tmp/lease/full.log || true
    rm -f /tmp/lease/scaling.pt
    tar czf "$OUT/results.tgz" -C /tmp lease
    ls -la "$OUT"
    ;;
rehearse)
    # Here, before a lease (about 10 minutes on 2 cores): what `main` runs, in quick, in a Python
    # environment shaped like the lent machine (PyTorch, NumPy, matplotlib, transformers, pytest,
    # scipy, gensim: nothing else) with the carried packages on PYTHONPATH, as `main` puts them.
    R=${REHEARSAL:-/tmp/lent-like}
    [ -x "$R/venv/bin/python" ] || { $PYTHON -m venv "$R/venv" && "$R/venv/bin/pip" install -q torch==2.13.0 \
        $(grep -iE "^(numpy|matplotlib|transformers|pytest|scipy|gensim|smart.open)==" requirements.txt); }
    rm -rf "$R/wheels" "$R/site" "$R/out" "$R/bundle" && mkdir -p "$R/wheels"
    # the pinned wheels of `prepare` and CARRIED, for this machine's Python instead of 3.12
    pins=$(grep -oE "\b[A-Za-z][A-Za-z0-9_.-]*==[0-9][A-Za-z0-9.]*" "$0" | grep -viE "^(gensim|smart_open|torch)==")
    $PYTHON -m pip download -q --no-deps --only-binary=:all: -d "$R/wheels" $pins \
        $(grep -iE "^($CARRIED)==" requirements.txt)
    "$R/venv/bin/pip" install -q --no-index --no-deps --target "$R/site" "$R"/wheels/*.whl
    grep -lE "choose\(|seconds=" book/*/*.md | sed 's#book/##; s#\.md$##' > "$R/pages.txt"
    $PYTHON benchmarks/full_profile.py prepare --bundle "$R/bundle" $(cat "$R/pages.txt")
    cp "$($PYTHON -c "from nlpbook import bert; print(bert.minilm_path() / 'model.safetensors')")" "$R/bundle/minilm/"
    export PYTHONPATH="$R/site:$PWD"
    lent="$R/venv/bin/python"
    (cd benchmarks && $lent lm_throughput.py --sizes quick --steps 3) | tail -n 3
    $lent benchmarks/lm_scaling.py prepare --data "$R/scaling.pt" --bundle "$R/bundle"
    $lent benchmarks/lm_scaling.py run --data "$R/scaling.pt" --out "$R/scaling.json" --sizes XS --seeds 0 \
        --steps 20 --batch 4 --context 64 --evals 2 --jobs 1 --deadline 200 | tail -n 3
    $lent benchmarks/full_profile.py run --bundle "$R/bundle" --out "$R/out" --profile quick --deadline 1500 \
        --jobs 2 $(cat "$R/pages.txt") | grep -vE "^  " || true
    $lent benchmarks/solution_suite.py --profile quick --jobs 2 --bundle "$R/bundle" --json "$R/solutions.json" \
        | tail -n 9
    ;;
record)
    dir=${2:?the folder the device tool put the files in}
    tmp=$(mktemp -d) && tar xzf "$dir/results.tgz" -C "$tmp"
    $PYTHON benchmarks/full_profile.py record "$tmp/lease/full/summary.json" --log "$tmp/lease/full/log.txt"
    cp "$tmp/lease/scaling.json" nlpbook/recorded_runs/lm-scaling.json 2>/dev/null || echo "no scaling runs"
    cp "$tmp/lease/solutions.json" nlpbook/recorded_runs/solutions-full.json 2>/dev/null || echo "no solution runs"
    [ -f "$dir/throughput.json" ] && cp "$dir/throughput.json" nlpbook/recorded_runs/lm-throughput.json
    echo "unpacked in $tmp"
    ;;
*)
    sed -n '2,19p' "$0"; exit 2 ;;
esac
