#!/bin/sh
# The command of the grader's image (grading/Dockerfile): `dask worker ...` or `dask scheduler ...` start Dask for
# `autograde --cluster` (grading/grade/cluster.py); the older names `dask-worker` and `dask-scheduler`, which some Helm
# charts and operators still run, mean the same; anything else is a grading command (`autograde /submissions ...`).
case "$1" in
dask) exec "$@" ;;
dask-worker | dask-scheduler)
    role=${1#dask-}
    shift
    exec dask "$role" "$@"
    ;;
*) exec python -m grading "$@" ;;
esac
