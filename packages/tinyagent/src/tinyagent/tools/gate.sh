# tinyagent's effects gate, sourced by bash through BASH_ENV before a command's first line runs.
# The command waits here until tinyagent has made the reply that asked for it durable: a line on
# the gate descriptor means go; end of file (tinyagent refused, or died first) means never run.
read -r -u "$TINYAGENT_GATE_FD" TINYAGENT_GATE || exit 125
exec {TINYAGENT_GATE_FD}<&-
unset BASH_ENV TINYAGENT_GATE TINYAGENT_GATE_FD
