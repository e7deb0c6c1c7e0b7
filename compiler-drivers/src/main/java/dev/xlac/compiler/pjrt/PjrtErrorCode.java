package dev.xlac.compiler.pjrt;

/**
 * {@code PJRT_Error_Code} from {@code xla/pjrt/c/pjrt_c_api.h} (the absl status codes). The
 * ordinal is the C value; a value this build does not know reads as {@link #UNKNOWN}.
 */
public enum PjrtErrorCode {
  OK,
  CANCELLED,
  UNKNOWN,
  INVALID_ARGUMENT,
  DEADLINE_EXCEEDED,
  NOT_FOUND,
  ALREADY_EXISTS,
  PERMISSION_DENIED,
  RESOURCE_EXHAUSTED,
  FAILED_PRECONDITION,
  ABORTED,
  OUT_OF_RANGE,
  UNIMPLEMENTED,
  INTERNAL,
  UNAVAILABLE,
  DATA_LOSS,
  UNAUTHENTICATED;

  private static final PjrtErrorCode[] BY_VALUE = values();

  public static PjrtErrorCode of(int value) {
    return value >= 0 && value < BY_VALUE.length ? BY_VALUE[value] : UNKNOWN;
  }
}
