#!/bin/sh
# Forks children (one ignores SIGTERM) and hangs, so only killing the whole group ends it.
sleep 600 &
echo $! >> pids
sh -c 'trap "" TERM; while :; do sleep 1; done' &
echo $! >> pids
( sleep 600; echo never ) &
echo $! >> pids
echo $$ >> pids
echo ready
wait
