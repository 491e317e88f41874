package promtext

import "testing"

func TestParseAcceptsAValidPage(t *testing.T) {
	page, err := Parse("# HELP x A \\\\ help\\nline.\n# TYPE x gauge\nx{b=\"q\\\"\\\\\\n\",a=\"1\"} 1.5\nx 2\n# TYPE y_total counter\ny_total 3\n")
	if err != nil {
		t.Fatal(err)
	}
	if page.Samples[Key("x", "a", "1", "b", "q\"\\\n")] != 1.5 || page.Samples["x"] != 2 || page.Samples["y_total"] != 3 ||
		page.Types["y_total"] != "counter" || page.Help["x"] != "A \\ help\nline." {
		t.Fatalf("%+v", page)
	}
}

func TestParseRejectsMalformedPages(t *testing.T) {
	for _, bad := range []string{
		"x 1\n",                                                      // no TYPE
		"# TYPE x gauge\nx{a=\"b} 1\n",                               // unterminated
		"# TYPE x gauge\nx{a=\"b\"} 1 123\n",                         // timestamp
		"# TYPE x gauge\nx 1\nx 2\n",                                 // duplicate
		"# TYPE x gauge\nx{a=\"\\q\"} 1\n",                           // bad escape
		"# TYPE x gauge\nx one\n",                                    // bad value
		"# TYPE x gauge\nx 1",                                        // no final newline
		"# TYPE x gauge\n# TYPE y gauge\nx 1\n",                      // sample outside its family
		"# TYPE x gauge\nx 1\n# TYPE y gauge\ny 1\n# HELP x again\n", // not contiguous
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
