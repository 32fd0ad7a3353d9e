#include <zlib.h>

#include <catch2/catch.hpp>

#include "util/gzip.h"
#include "util/html_escape.h"
#include "web/http_server.h"

using namespace loadwatch;

TEST_CASE("gzip output decompresses to the input") {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "loadwatch_metric{i=\"" + std::to_string(i) + "\"} 1\n";
  std::string gz = gzip_compress(text);
  CHECK(gz.size() < text.size() / 4);
  std::string back(text.size() + 16, '\0');
  z_stream zs{};
  REQUIRE(inflateInit2(&zs, 15 + 16) == Z_OK);
  zs.next_in = reinterpret_cast<Bytef*>(gz.data());
  zs.avail_in = gz.size();
  zs.next_out = reinterpret_cast<Bytef*>(back.data());
  zs.avail_out = back.size();
  REQUIRE(inflate(&zs, Z_FINISH) == Z_STREAM_END);
  back.resize(zs.total_out);
  inflateEnd(&zs);
  CHECK(back == text);
}

TEST_CASE("Accept-Encoding negotiation") {
  CHECK(accepts_gzip("gzip"));
  CHECK(accepts_gzip("deflate, gzip;q=1.0, *;q=0.5"));
  CHECK(accepts_gzip("identity, *"));
  CHECK_FALSE(accepts_gzip(""));
  CHECK_FALSE(accepts_gzip("identity"));
  CHECK_FALSE(accepts_gzip("gzip;q=0"));
  CHECK(accepts_gzip("gzip;q=0.5"));
}

TEST_CASE("query parameters are URL-decoded") {
  HttpRequest r;
  r.query = "db=jmeter%20run&precision=ms&x";
  CHECK(r.query_param("db") == "jmeter run");
  CHECK(r.query_param("precision") == "ms");
  CHECK(r.query_param("x").empty());
  CHECK(r.query_param("missing").empty());
  r.query = "a=x+y%2By&b=%41&b=second&c=";
  CHECK(r.query_param("a") == "x y+y");
  CHECK(r.query_param("b") == "A");  // the first one; an escape at the very end is decoded
  CHECK(r.query_param("c").empty());
  r.query.clear();
  CHECK(r.query_param("a").empty());
}

TEST_CASE("html_escape turns every markup character into an entity") {
  CHECK(html_escape("plain text") == "plain text");
  CHECK(html_escape("<a href=\"x\" title='y'>&amp;</a>") ==
        "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;");
  CHECK(html_escape("") == "");
}
