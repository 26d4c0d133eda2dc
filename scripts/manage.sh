#!/usr/bin/env bash
# manage.py against the demo's database and settings: ./scripts/manage.sh retry_predictions
set -euo pipefail
cd "$(dirname "$0")/.."
# Where the secret key, logs (and, through the settings, the database and models) go.
VAR="${DYNABENCH_VAR_DIR:-$PWD/var}"
[ -s "$VAR/secret_key" ] || { echo "Run 'make demo' or 'make serve' once first (it creates $VAR/secret_key)." >&2; exit 1; }
export SECRET_KEY_FILE="$VAR/secret_key" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/python manage.py "$@"
