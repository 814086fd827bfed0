#!/bin/sh
# Writes ${FLOOD_BYTES:-200 MiB} to stdout as fast as it can, then a marker the tail must keep.
echo FLOOD-START
yes 'volt flood line: bounded capture keeps the head and the tail only' | head -c "${FLOOD_BYTES:-209715200}"
echo
echo FLOOD-END
