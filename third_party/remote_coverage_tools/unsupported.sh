#!/bin/sh
echo "coverage is not supported in the offline Bazel build" >&2
exit 1
