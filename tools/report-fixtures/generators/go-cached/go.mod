module example.com/proofgraphcached

go 1.19
