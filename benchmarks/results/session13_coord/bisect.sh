#!/usr/bin/env bash
# Session 13: which commit made few-microsecond honest kernels read candidate_noise (a3e1fd5 fine in session 12)?
cd "$(dirname "$0")/../.."
export CC=/opt/gcc/bin/gcc PYTHONUNBUFFERED=1
for n in a3 t7 nf; do
  echo "== $n"
  (cd build/$n && cp ../coord/tiny_two.py . && PYTHONPATH=$PWD timeout 75 python3 tiny_two.py 2>&1 | grep -v -e UserWarning -e _warn_once | tail -2)
done
