package reclaim

import (
	"compress/zlib"
	"io"
	"sync"
)

// inflaters are zlib readers kept for another object: each holds a
// 32 KiB window, and the proofs of a thousand directories read a few
// objects each.
var inflaters sync.Pool

// inflate reads the zlib stream r; done gives the reader back, once
// nothing reads it any more.
func inflate(r io.Reader) (z io.Reader, done func(), err error) {
	zr, ok := inflaters.Get().(io.ReadCloser)
	if ok {
		err = zr.(zlib.Resetter).Reset(r, nil)
	} else {
		zr, err = zlib.NewReader(r)
	}
	if err != nil {
		if zr != nil {
			inflaters.Put(zr)
		}
		return nil, nil, err
	}
	return zr, func() { inflaters.Put(zr) }, nil
}
