#!/bin/sh
# Prints the environment it was given, one NAME=value per line.
env
