// Exported from JAX by 05_stablehlo_from_jax.ipynb: jax.jit(mlp).lower(*args).as_text()
module @jit_mlp attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x3xf32>, %arg1: tensor<3x5xf32>, %arg2: tensor<5xf32>, %arg3: tensor<5x5xf32>, %arg4: tensor<5x3xf32>) -> (tensor<4x3xf32> {jax.result_info = "result[0]"}, tensor<4xf32> {jax.result_info = "result[1]"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
    %1 = stablehlo.broadcast_in_dim %arg2, dims = [1] : (tensor<5xf32>) -> tensor<1x5xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<1x5xf32>) -> tensor<4x5xf32>
    %3 = stablehlo.add %0, %2 : tensor<4x5xf32>
    %4 = stablehlo.tanh %3 : tensor<4x5xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %5:3 = stablehlo.while(%iterArg = %arg3, %iterArg_5 = %c, %iterArg_6 = %4) : tensor<5x5xf32>, tensor<i32>, tensor<4x5xf32>
    cond {
      %c_7 = stablehlo.constant dense<2> : tensor<i32>
      %26 = stablehlo.compare LT, %iterArg_5, %c_7, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %26 : tensor<i1>
    } do {
      %26 = func.call @closed_call(%iterArg, %iterArg_6) : (tensor<5x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
      %c_7 = stablehlo.constant dense<1> : tensor<i32>
      %27 = stablehlo.add %iterArg_5, %c_7 : tensor<i32>
      stablehlo.return %iterArg, %27, %26 : tensor<5x5xf32>, tensor<i32>, tensor<4x5xf32>
    }
    %6 = stablehlo.dot_general %5#2, %arg4, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x5xf32>, tensor<5x3xf32>) -> tensor<4x3xf32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %7 = stablehlo.reduce(%6 init: %cst) applies stablehlo.maximum across dimensions = [1] : (tensor<4x3xf32>, tensor<f32>) -> tensor<4xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %9 = stablehlo.maximum %8, %7 : tensor<4xf32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [0] : (tensor<4xf32>) -> tensor<4x1xf32>
    %11 = stablehlo.broadcast_in_dim %10, dims = [0, 1] : (tensor<4x1xf32>) -> tensor<4x3xf32>
    %12 = stablehlo.subtract %6, %11 : tensor<4x3xf32>
    %13 = stablehlo.exponential %12 : tensor<4x3xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %14 = stablehlo.reduce(%13 init: %cst_1) applies stablehlo.add across dimensions = [1] : (tensor<4x3xf32>, tensor<f32>) -> tensor<4xf32>
    %15 = stablehlo.broadcast_in_dim %14, dims = [0] : (tensor<4xf32>) -> tensor<4x1xf32>
    %16 = stablehlo.broadcast_in_dim %15, dims = [0, 1] : (tensor<4x1xf32>) -> tensor<4x3xf32>
    %17 = stablehlo.divide %13, %16 : tensor<4x3xf32>
    %18 = stablehlo.negate %6 : tensor<4x3xf32>
    %19 = stablehlo.exponential %18 : tensor<4x3xf32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %20 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<4x3xf32>
    %21 = stablehlo.add %20, %19 : tensor<4x3xf32>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %22 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<4x3xf32>
    %23 = stablehlo.divide %22, %21 : tensor<4x3xf32>
    %24 = stablehlo.multiply %17, %23 : tensor<4x3xf32>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %25 = stablehlo.reduce(%24 init: %cst_4) applies stablehlo.add across dimensions = [1] : (tensor<4x3xf32>, tensor<f32>) -> tensor<4xf32>
    return %17, %25 : tensor<4x3xf32>, tensor<4xf32>
  }
  func.func private @closed_call(%arg0: tensor<5x5xf32>, %arg1: tensor<4x5xf32>) -> tensor<4x5xf32> {
    %0 = stablehlo.dot_general %arg1, %arg0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x5xf32>, tensor<5x5xf32>) -> tensor<4x5xf32>
    %1 = stablehlo.tanh %0 : tensor<4x5xf32>
    %2 = stablehlo.add %arg1, %1 : tensor<4x5xf32>
    return %2 : tensor<4x5xf32>
  }
}

