#!/usr/bin/env bash
set -u
PYTHONDONTWRITEBYTECODE=1 python3 _verify/check.py
