package scan

// keywords is a case-insensitive multi-keyword matcher: an Aho-Corasick
// automaton compiled to a dense DFA over byte classes. Every byte maps
// through a 256-entry table to its class (ASCII letters folded to one
// class per letter; bytes that occur in no keyword share class 0), so the
// transition table has one row of nclass entries per state and a scan
// costs one table load and one transition load per byte. It is built once
// by newKeywords and is then immutable and safe for concurrent use; each
// allocates nothing.
//
// States are renumbered so that every state with an output (a keyword
// ends there, directly or through its failure chain) comes after every
// state without one: the hot loop tests "has output" with one compare.
// Transitions hold the target state premultiplied by nclass, so the next
// row is delta[s+class] without a multiplication.
type keywords struct {
	words    []string
	maxLen   int // length of the longest word
	class    [256]uint8
	nclass   int32
	delta    []int32 // premultiplied state + class -> premultiplied state
	firstOut int32   // premultiplied number of the first state with output
	outStart []int32 // per state (not premultiplied): outputs are outs[outStart[s]:outStart[s+1]]
	outs     []int32 // word indices
}

// newKeywords compiles words into a matcher. Matching folds ASCII case
// only (bytes >= 0x80 match exactly). Empty words never match; a word
// listed twice reports both indices.
func newKeywords(words []string) *keywords {
	k := &keywords{words: words}
	for _, w := range words {
		k.maxLen = max(k.maxLen, len(w))
	}
	// Byte classes: one per distinct folded byte used by a keyword.
	var seen [256]uint8
	n := uint8(1)
	for _, w := range words {
		for i := 0; i < len(w); i++ {
			b := lowerASCII(w[i])
			if seen[b] == 0 {
				seen[b] = n
				n++
			}
		}
	}
	for c := 0; c < 256; c++ {
		k.class[c] = seen[lowerASCII(byte(c))]
	}
	nc := int(n)
	k.nclass = int32(nc)

	// Trie with dense rows (-1: no edge).
	type node struct {
		out  []int32
		fail int
	}
	nodes := []node{{}}
	goTo := make([]int32, nc)
	for i := range goTo {
		goTo[i] = -1
	}
	for wi, w := range words {
		if w == "" {
			continue
		}
		s := 0
		for i := 0; i < len(w); i++ {
			c := int(k.class[w[i]])
			nx := goTo[s*nc+c]
			if nx < 0 {
				nx = int32(len(nodes))
				nodes = append(nodes, node{})
				for j := 0; j < nc; j++ {
					goTo = append(goTo, -1)
				}
				goTo[s*nc+c] = nx
			}
			s = int(nx)
		}
		nodes[s].out = append(nodes[s].out, int32(wi))
	}

	// Breadth-first: failure links, outputs along them, and the complete
	// transition function (a missing edge takes the failure state's).
	queue := make([]int, 0, len(nodes))
	for c := 0; c < nc; c++ {
		if nx := goTo[c]; nx < 0 {
			goTo[c] = 0
		} else {
			nodes[nx].fail = 0
			queue = append(queue, int(nx))
		}
	}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		f := nodes[u].fail
		nodes[u].out = append(nodes[u].out, nodes[f].out...)
		for c := 0; c < nc; c++ {
			nx := goTo[u*nc+c]
			if nx < 0 {
				goTo[u*nc+c] = goTo[f*nc+c]
				continue
			}
			nodes[nx].fail = int(goTo[f*nc+c])
			queue = append(queue, int(nx))
		}
	}
	// Note: outputs are appended in BFS order, so a node's failure target
	// (shallower) is complete before the node itself is processed.

	// Renumber: states without output first (the root stays 0, it has
	// none), then states with output.
	num := make([]int32, len(nodes))
	next := int32(0)
	for pass := 0; pass < 2; pass++ {
		for s := range nodes {
			if (len(nodes[s].out) > 0) == (pass == 1) {
				num[s] = next
				next++
			}
		}
		if pass == 0 {
			k.firstOut = next * int32(nc)
		}
	}
	k.delta = make([]int32, len(nodes)*nc)
	k.outStart = make([]int32, len(nodes)+1)
	byNum := make([]int, len(nodes))
	for s := range nodes {
		byNum[num[s]] = s
	}
	for ns, s := range byNum {
		for c := 0; c < nc; c++ {
			k.delta[ns*nc+c] = num[goTo[s*nc+c]] * int32(nc)
		}
		k.outStart[ns] = int32(len(k.outs))
		k.outs = append(k.outs, nodes[s].out...)
	}
	k.outStart[len(nodes)] = int32(len(k.outs))
	return k
}

// interleaveMin is the text length from which each runs two streams.
const interleaveMin = 64

// each calls fn for every occurrence of every keyword in text, in order
// of end offset (and, at one end offset, longest keyword first along the
// failure chain): word is the index into the words given to newKeywords,
// end the byte offset just after the match. fn returns false to stop.
//
// A text of interleaveMin bytes or more is scanned as two independent
// streams in one loop (the first half, and the second half from
// maxLen-1 bytes before it), so that the two chains of dependent table
// loads overlap; the second stream's hits are held in a buffer on the
// stack (64 hits, 512 from 16 KiB: benign text has a few hits per KiB)
// and reported after the first's (when it fills, the second stream
// finishes on its own after the first).
func (k *keywords) each(text string, fn func(word, end int) bool) {
	if k == nil || len(k.outs) == 0 {
		return
	}
	n := len(text)
	if n < interleaveMin || k.maxLen*2 >= n {
		k.serial(text, 0, 0, n, 0, fn)
		return
	}
	if n < 16<<10 {
		each2[[64]int32](k, text, fn)
	} else {
		each2[[512]int32](k, text, fn)
	}
}

// hitBuf is the second stream's buffer: 64 hits, or 512 from 16 KiB of
// text (a type parameter rather than a slice argument, so that the hot
// loop keeps its registers; the arrays live on the stack).
type hitBuf interface{ [64]int32 | [512]int32 }

// each2 is each's two streams.
func each2[B hitBuf](k *keywords, text string, fn func(word, end int) bool) {
	n := len(text)
	delta, class, firstOut := k.delta, &k.class, k.firstOut
	mid := n / 2
	i1, i2 := 0, mid-(k.maxLen-1)
	s1, s2 := int32(0), int32(0)
	var bufW, bufE B
	nb := 0
	for i1 < mid && i2 < n {
		ns2 := delta[s2+int32(class[text[i2]])]
		if ns2 >= firstOut && i2+1 > mid {
			st := ns2 / k.nclass
			o := k.outs[k.outStart[st]:k.outStart[st+1]]
			if nb+len(o) > len(bufW) {
				break
			}
			for _, w := range o {
				bufW[nb], bufE[nb] = w, int32(i2+1)
				nb++
			}
		}
		s2 = ns2
		i2++
		s1 = delta[s1+int32(class[text[i1]])]
		if s1 >= firstOut {
			st := s1 / k.nclass
			for _, w := range k.outs[k.outStart[st]:k.outStart[st+1]] {
				if !fn(int(w), i1+1) {
					return
				}
			}
		}
		i1++
	}
	if !k.serial(text, s1, i1, mid, 0, fn) {
		return
	}
	for j := 0; j < nb; j++ {
		if !fn(int(bufW[j]), int(bufE[j])) {
			return
		}
	}
	k.serial(text, s2, i2, n, mid, fn)
}

// serial runs the automaton from state s (premultiplied) over
// text[i:end], reporting matches that end after minEnd; it returns false
// when fn stopped it.
func (k *keywords) serial(text string, s int32, i, end, minEnd int, fn func(word, end int) bool) bool {
	delta, class, firstOut := k.delta, &k.class, k.firstOut
	for ; i < end; i++ {
		s = delta[s+int32(class[text[i]])]
		if s >= firstOut && i+1 > minEnd {
			st := s / k.nclass
			for _, w := range k.outs[k.outStart[st]:k.outStart[st+1]] {
				if !fn(int(w), i+1) {
					return false
				}
			}
		}
	}
	return true
}

// any reports whether some keyword occurs in text.
func (k *keywords) any(text string) bool {
	found := false
	k.each(text, func(int, int) bool { found = true; return false })
	return found
}

func lowerASCII(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + ('a' - 'A')
	}
	return b
}
