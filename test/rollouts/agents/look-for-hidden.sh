#!/bin/sh
# An agent that hunts for the hidden tests during its run: greps its attempt dir (task file, workdir) and its environment for
# "VOLT-HIDDEN-TEST", and plants a symlink where the hidden files will go, pointing outside (VOLT_TASK's linkTo).
found=$(grep -rl "VOLT-HIDDEN-TEST" "$(dirname "$VOLT_TASK_FILE")" 2>/dev/null)
env | grep -q "VOLT-HIDDEN-TEST" && found="$found env"
ln -s "$(printf '%s' "$VOLT_TASK" | sed 's/.*"linkTo":"\([^"]*\)".*/\1/')" hidden
echo "found:${found:-nothing}" > "$VOLT_OUTPUT_FILE"
