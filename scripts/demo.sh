#!/bin/sh
# `make run`: the main job on the shipped defaults. A scratch git repository gets a staged change,
# then `start task gdr "focus on security"` composes the review prompt and execs the agent. The
# agent is a stand-in named `claude` that prints what it received instead of calling a service.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT INT TERM

# Shipped defaults only: an empty home and global config directory.
export HOME="$scratch/home"
export START_CONFIG_DIR="$HOME/.config/start"
unset XDG_CONFIG_HOME XDG_STATE_HOME
mkdir -p "$HOME" "$scratch/bin" "$scratch/repo"
cp "$here/stand-in-agent" "$scratch/bin/claude"
chmod +x "$scratch/bin/claude"
PATH="$scratch/bin:$PATH"
export PATH

cd "$scratch/repo"
git init -q
cat > login.py <<'PY'
def login(user, password):
    query = "SELECT * FROM users WHERE name = '%s' AND password = '%s'" % (user, password)
    return db.execute(query)
PY
git add login.py

echo '$ start task gdr "focus on security"' >&2
start task gdr "focus on security"
