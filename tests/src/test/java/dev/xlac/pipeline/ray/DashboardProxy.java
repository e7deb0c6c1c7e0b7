package dev.xlac.pipeline.ray;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Function;

/**
 * A reverse proxy in front of a Ray dashboard, as a site's ingress puts one under a path ({@code /ray/...} to the
 * dashboard's {@code /...}; anything else is 404), made with the JDK's HTTP server for tests. It keeps what each
 * request looked like on the wire (method, path, headers), and a test's {@link #rule} may make a request fail
 * after the dashboard took it, as a gateway that gave up waiting does.
 */
final class DashboardProxy implements AutoCloseable {
  /** A request as it reached the proxy: its method, its path (with the proxy's prefix) and its headers. */
  record Seen(String method, String path, Map<String, List<String>> headers) {}

  /** What the proxy does with a request. */
  enum Answer {
    FORWARD,
    /** Forwards it, then answers 504 as a gateway whose wait for the dashboard ran out. */
    FORWARD_THEN_GATEWAY_TIMEOUT
  }

  // Headers the JDK's client sets itself (and refuses to be given).
  private static final Set<String> OWN = Set.of("connection", "content-length", "expect", "host", "upgrade");

  private final HttpServer server;
  private final ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor();
  private final HttpClient http = HttpClient.newHttpClient();
  private final String dashboard;
  private final String prefix;
  private final List<Seen> seen = Collections.synchronizedList(new ArrayList<>());
  private volatile Function<Seen, Answer> rule = s -> Answer.FORWARD;

  private DashboardProxy(String dashboard, String prefix) throws IOException {
    this.dashboard = dashboard;
    this.prefix = prefix;
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/", this::handle);
    server.setExecutor(threads); // a request may wait on another (a rule that stops jobs through the proxy)
    server.start();
  }

  /** A proxy on a free port of 127.0.0.1 serving {@code dashboard} (http://HOST:PORT) under {@code prefix} (/ray/). */
  static DashboardProxy start(String dashboard, String prefix) throws IOException {
    return new DashboardProxy(dashboard, prefix);
  }

  /** The dashboard's address through the proxy, as a user gives it: http://127.0.0.1:PORT/ray (no last '/'). */
  String address() {
    return "http://127.0.0.1:" + server.getAddress().getPort() + prefix.substring(0, prefix.length() - 1);
  }

  /** From now on, what the proxy does with each request. */
  void rule(Function<Seen, Answer> rule) {
    this.rule = rule;
  }

  /** Every request so far, in order. */
  List<Seen> seen() {
    return List.copyOf(seen);
  }

  private void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      try {
        forward(exchange);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        reply(exchange, 502, "text/plain", "interrupted");
      } catch (RuntimeException e) { // a rule's failed assertion: the test sees it as a 500
        reply(exchange, 500, "text/plain", String.valueOf(e));
      }
    }
  }

  private void forward(HttpExchange exchange) throws IOException, InterruptedException {
    String path = exchange.getRequestURI().getRawPath();
    Seen request = new Seen(exchange.getRequestMethod(), path, Map.copyOf(exchange.getRequestHeaders()));
    seen.add(request);
    if (!path.startsWith(prefix)) {
      reply(exchange, 404, "text/plain", "no route to " + path);
      return;
    }
    Answer answer = rule.apply(request);
    String query = exchange.getRequestURI().getRawQuery();
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(dashboard + "/" + path.substring(prefix.length())
        + (query == null ? "" : "?" + query))).timeout(Duration.ofSeconds(60))
        .method(request.method(), HttpRequest.BodyPublishers.ofByteArray(exchange.getRequestBody().readAllBytes()));
    request.headers().forEach((name, values) -> {
      if (!OWN.contains(name.toLowerCase(java.util.Locale.ROOT))) {
        values.forEach(v -> b.header(name, v));
      }
    });
    HttpResponse<byte[]> r = http.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
    if (answer == Answer.FORWARD_THEN_GATEWAY_TIMEOUT) {
      reply(exchange, 504, "text/html", "<html><body>504 Gateway Time-out</body></html>");
      return;
    }
    reply(exchange, r.statusCode(), r.headers().firstValue("Content-Type").orElse("application/octet-stream"),
        r.body());
  }

  private static void reply(HttpExchange exchange, int status, String type, String body) throws IOException {
    reply(exchange, status, type, body.getBytes(StandardCharsets.UTF_8));
  }

  private static void reply(HttpExchange exchange, int status, String type, byte[] body) throws IOException {
    exchange.getResponseHeaders().set("Content-Type", type);
    exchange.sendResponseHeaders(status, body.length == 0 ? -1 : body.length);
    if (body.length > 0) {
      exchange.getResponseBody().write(body);
    }
  }

  @Override
  public void close() {
    server.stop(0);
    threads.close();
    http.close();
  }
}
