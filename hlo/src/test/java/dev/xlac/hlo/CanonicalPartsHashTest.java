package dev.xlac.hlo;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The parts' 64-bit hash: the same bytes give the same hash however they are cut into updates. */
class CanonicalPartsHashTest {
  private static long hash(byte[] bytes, int[] cuts) {
    CanonicalParts.Hash h = new CanonicalParts.Hash();
    int at = 0;
    for (int cut : cuts) {
      h.update(bytes, at, cut - at);
      at = cut;
    }
    h.update(bytes, at, bytes.length - at);
    return h.finish();
  }

  @Test
  void sameBytes_sameHash_howeverCut() {
    Random random = new Random(7);
    for (int size : new int[] {0, 1, 7, 8, 31, 32, 33, 63, 64, 65, 100, 1000, 4099}) {
      byte[] bytes = new byte[size];
      random.nextBytes(bytes);
      long whole = hash(bytes, new int[0]);
      for (int trial = 0; trial < 50; trial++) {
        int[] cuts = random.ints(random.nextInt(6), 0, size + 1).sorted().toArray();
        assertThat(hash(bytes, cuts)).as("size %d cut at %s", size, java.util.Arrays.toString(cuts)).isEqualTo(whole);
      }
    }
  }

  @Test
  void everyOneByteChange_andEveryLength_changesTheHash() {
    Random random = new Random(11);
    byte[] bytes = new byte[200];
    random.nextBytes(bytes);
    Set<Long> seen = new HashSet<>();
    for (int len = 0; len <= bytes.length; len++) {
      assertThat(seen.add(hash(java.util.Arrays.copyOf(bytes, len), new int[0]))).as("prefix of %d bytes", len).isTrue();
    }
    for (int i = 0; i < bytes.length; i++) {
      byte[] changed = bytes.clone();
      changed[i] ^= 1;
      assertThat(seen.add(hash(changed, new int[0]))).as("bit flipped in byte %d", i).isTrue();
    }
  }

  @Test
  void reset_startsOver() {
    byte[] bytes = "a part of the canonical form".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    CanonicalParts.Hash h = new CanonicalParts.Hash();
    h.update(bytes, 0, 5);
    h.reset();
    h.update(bytes, 0, bytes.length);
    assertThat(h.finish()).isEqualTo(hash(bytes, new int[0]));
  }
}
