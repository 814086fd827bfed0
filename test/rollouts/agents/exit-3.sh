#!/bin/sh
# Fails the way a broken agent does: a message on stderr and a non-zero exit.
echo "agent gave up" >&2
exit 3
