package dev.xlac.pipeline.ray;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.jr.ob.JSON;
import java.io.IOException;
import java.util.Map;

/**
 * Reads the JSON of Ray's answers and of JSON options with jackson-jr (maps, lists, strings, numbers, booleans,
 * null); a text that is not one JSON value is an IllegalArgumentException saying, in jackson's words, what was wrong
 * and where. jackson-jr rather than a reader of our own: the JVM world reads JSON with Jackson, and this is its
 * smallest layer (no data binding needed here).
 */
final class RayJson {
  private static final JSON READER = JSON.std.with(JSON.Feature.FAIL_ON_DUPLICATE_MAP_KEYS);

  private RayJson() {}

  static Object parse(String text) {
    try (JsonParser p = READER.getStreamingFactory().createParser(text)) {
      Object value = READER.anyFrom(p);
      if (p.nextToken() != null) { // one value, as RFC 8259 has it: "[1] [2]" is not JSON
        throw new IllegalArgumentException("more after the JSON value at offset "
            + p.currentTokenLocation().getCharOffset());
      }
      return value;
    } catch (JsonProcessingException e) {
      JsonLocation at = e.getLocation();
      String where = at == null || at.getCharOffset() < 0 ? "" : " at offset " + at.getCharOffset();
      String why = e.getOriginalMessage();
      int marker = why.indexOf(" (start marker at "); // names jackson's input "REDACTED": the offset says more
      throw new IllegalArgumentException((marker < 0 ? why : why.substring(0, marker)) + where, e);
    } catch (IOException e) { // a String has no I/O of its own
      throw new IllegalArgumentException(e.getMessage(), e);
    }
  }

  /** {@link #parse} of a text that must be an object. */
  @SuppressWarnings("unchecked")
  static Map<String, Object> object(String text) {
    if (parse(text) instanceof Map<?, ?> m) {
      return (Map<String, Object>) m;
    }
    throw new IllegalArgumentException("not a JSON object");
  }
}
