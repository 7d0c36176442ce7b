#!/usr/bin/env bash
set -u
python3 answer_check.py facts.json
