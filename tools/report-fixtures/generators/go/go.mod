module example.com/proofgraphfixture

go 1.19
