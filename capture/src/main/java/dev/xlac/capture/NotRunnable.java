package dev.xlac.capture;

/**
 * A command that could not be started: not found (127) or not runnable (126), with the one line that says so
 * ({@link CommandNotRunnableException} as a result, for the runs that report it).
 */
public record NotRunnable(int status, String message) {}
