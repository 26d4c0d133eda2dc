#!/usr/bin/env bash
# manage.py against the demo's database and settings: ./scripts/manage.sh retry_predictions
set -euo pipefail
cd "$(dirname "$0")/.."
[ -s var/secret_key ] || { echo "Run 'make demo' once first (it creates var/secret_key)." >&2; exit 1; }
export SECRET_KEY_FILE="$PWD/var/secret_key" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/python manage.py "$@"
