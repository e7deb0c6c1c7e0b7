package dev.xlac.hlo;

import dev.xlac.hlo.proto.XlaDataProtos.PrimitiveType;
import dev.xlac.hlo.proto.XlaDataProtos.ShapeProto;
import java.util.Locale;
import java.util.stream.Collectors;

/** Shapes written the way XLA's text format writes them: {@code f32[32,128]{1,0}}, {@code (s32[], f32[4])}. */
public final class HloShapes {
  private HloShapes() {}

  public static String format(ShapeProto s) {
    if (s.getElementType() == PrimitiveType.TUPLE) {
      return s.getTupleShapesList().stream().map(HloShapes::format).collect(Collectors.joining(", ", "(", ")"));
    }
    String type = elementType(s);
    if (s.getElementType() == PrimitiveType.TOKEN || s.getElementType() == PrimitiveType.OPAQUE_TYPE) {
      return type + "[]";
    }
    StringBuilder b = new StringBuilder(type).append('[');
    for (int i = 0; i < s.getDimensionsCount(); i++) {
      if (i > 0) {
        b.append(',');
      }
      if (i < s.getIsDynamicDimensionCount() && s.getIsDynamicDimension(i)) {
        b.append("<=");
      }
      b.append(s.getDimensions(i));
    }
    b.append(']');
    if (s.hasLayout() && s.getDimensionsCount() > 0) {
      b.append(s.getLayout().getMinorToMajorList().stream().map(String::valueOf)
          .collect(Collectors.joining(",", "{", "}")));
    }
    return b.toString();
  }

  /** The element type as XLA's text writes it: {@code f32}, {@code bf16}, {@code tuple}. */
  public static String elementType(ShapeProto s) {
    return s.getElementType() == PrimitiveType.UNRECOGNIZED
        ? "type" + s.getElementTypeValue()
        : s.getElementType().name().toLowerCase(Locale.ROOT);
  }

  /** Bits per element of an array type; 0 for tuples, tokens and unknown types. */
  public static int bitWidth(PrimitiveType t) {
    return switch (t) {
      case PRED, S8, U8, F8E5M2, F8E4M3FN, F8E4M3B11FNUZ, F8E5M2FNUZ, F8E4M3FNUZ, F8E4M3, F8E3M4, F8E8M0FNU -> 8;
      case S1, U1 -> 1;
      case S2, U2 -> 2;
      case S4, U4, F4E2M1FN -> 4;
      case S16, U16, F16, BF16 -> 16;
      case S32, U32, F32 -> 32;
      case S64, U64, F64, C64 -> 64;
      case C128 -> 128;
      default -> 0;
    };
  }

  /** Bytes of data an array of this shape holds (tuples: the sum of their elements). */
  public static long byteSize(ShapeProto s) {
    if (s.getElementType() == PrimitiveType.TUPLE) {
      return s.getTupleShapesList().stream().mapToLong(HloShapes::byteSize).sum();
    }
    long elements = 1;
    for (long d : s.getDimensionsList()) {
      elements = Math.multiplyExact(elements, Math.max(0, d));
    }
    return (Math.multiplyExact(elements, bitWidth(s.getElementType())) + 7) / 8;
  }

  /**
   * A shape as XLA's text writes it, without its layouts: {@code f32[8,8]{1,0}} is {@code f32[8,8]}; null is the
   * empty string.
   */
  public static String withoutLayout(String shape) {
    return shape == null ? "" : shape.replaceAll("\\{[^{}]*\\}", "");
  }
}
